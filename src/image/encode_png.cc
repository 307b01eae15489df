// PNG writing with libpng (test data and tools). Errors longjmp to the phase function's
// setjmp, which holds only trivially destructible locals, as in decode_png.cc; the output
// grows in a malloc'ed buffer so nothing in the callbacks can throw.
#include <png.h>

#include <csetjmp>
#include <cstdlib>
#include <cstring>

#include "image/image.h"

namespace systolic::image {
namespace {

struct Job {
  png_structp png = nullptr;
  png_infop info = nullptr;
  std::jmp_buf jump;
  char message[256] = {};
  unsigned char* buffer = nullptr;
  std::size_t size = 0, capacity = 0;
};

[[noreturn]] void on_error(png_structp png, png_const_charp msg) {
  auto* job = static_cast<Job*>(png_get_error_ptr(png));
  std::strncpy(job->message, msg, sizeof job->message - 1);
  std::longjmp(job->jump, 1);
}
void on_warning(png_structp, png_const_charp) {}

void write_bytes(png_structp png, png_bytep data, png_size_t n) {
  auto* job = static_cast<Job*>(png_get_io_ptr(png));
  if (job->size + n > job->capacity) {
    std::size_t cap = job->capacity ? job->capacity * 2 : 65536;
    while (cap < job->size + n) cap *= 2;
    auto* grown = static_cast<unsigned char*>(std::realloc(job->buffer, cap));
    if (!grown) png_error(png, "out of memory");
    job->buffer = grown;
    job->capacity = cap;
  }
  std::memcpy(job->buffer + job->size, data, n);
  job->size += n;
}
void flush(png_structp) {}

int color_type(const PngLayout& l) {
  if (!l.palette.empty()) return PNG_COLOR_TYPE_PALETTE;
  switch (l.channels) {
    case 1: return PNG_COLOR_TYPE_GRAY;
    case 2: return PNG_COLOR_TYPE_GRAY_ALPHA;
    case 4: return PNG_COLOR_TYPE_RGB_ALPHA;
    default: return PNG_COLOR_TYPE_RGB;
  }
}

bool compress(Job* job, const uint8_t* samples, int width, int height, const PngLayout& l, png_bytep* rows) {
  if (setjmp(job->jump)) return false;
  png_set_write_fn(job->png, job, write_bytes, flush);
  png_set_IHDR(job->png, job->info, width, height, l.bit_depth, color_type(l),
               l.interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  if (!l.palette.empty()) {
    png_set_PLTE(job->png, job->info, reinterpret_cast<png_const_colorp>(l.palette.data()),
                 static_cast<int>(l.palette.size() / 3));
    if (!l.palette_alpha.empty())
      png_set_tRNS(job->png, job->info, l.palette_alpha.data(), static_cast<int>(l.palette_alpha.size()), nullptr);
  }
  png_write_info(job->png, job->info);
  if (l.bit_depth < 8) png_set_packing(job->png);  // one sample per byte in, packed in the file
  if (l.bit_depth == 16) png_set_swap(job->png);   // host-order (little-endian) samples
  png_write_image(job->png, rows);                 // all Adam7 passes when interlaced
  png_write_end(job->png, nullptr);
  return true;
}

}  // namespace

Status encode_png_samples(const void* samples, int width, int height, const PngLayout& l, std::vector<uint8_t>* out) {
  if (width <= 0 || height <= 0) return Err("PNG: cannot write a %dx%d image", width, height);
  const bool palette = !l.palette.empty();
  if (palette ? (l.channels != 1 || l.bit_depth > 8 || l.palette.size() % 3 != 0 || l.palette.size() > 768)
              : (l.channels < 1 || l.channels > 4 ||
                 (l.bit_depth != 8 && l.bit_depth != 16 && !(l.channels == 1 && l.bit_depth < 8))))
    return Err("PNG: cannot write %d channels of %d bits%s", l.channels, l.bit_depth, palette ? " with a palette" : "");
  const std::size_t stride = static_cast<std::size_t>(width) * l.channels * (l.bit_depth == 16 ? 2 : 1);
  std::vector<png_bytep> rows(height);
  for (int y = 0; y < height; ++y)
    rows[y] = const_cast<png_bytep>(static_cast<const uint8_t*>(samples) + y * stride);
  Job job;
  job.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &job, on_error, on_warning);
  if (job.png) job.info = png_create_info_struct(job.png);
  Status st;
  if (!job.png || !job.info)
    st = Err("PNG: libpng could not be initialised");
  else if (compress(&job, static_cast<const uint8_t*>(samples), width, height, l, rows.data()))
    out->assign(job.buffer, job.buffer + job.size);
  else
    st = Err("PNG: %s", job.message);
  png_destroy_write_struct(&job.png, &job.info);
  std::free(job.buffer);
  return st;
}

Status encode_png(const Image& img, std::vector<uint8_t>* out) {
  if (img.rgb.size() != static_cast<std::size_t>(img.width) * img.height * 3)
    return Err("PNG: image buffer holds %zu bytes, not %dx%dx3", img.rgb.size(), img.width, img.height);
  return encode_png_samples(img.rgb.data(), img.width, img.height, PngLayout{}, out);
}

}  // namespace systolic::image
