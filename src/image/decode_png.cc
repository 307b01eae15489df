// PNG decoding with libpng. libpng's error callback must not return: it longjmps to a setjmp in
// one of the small phase functions below, which hold only trivially destructible locals and
// call nothing but libpng, so the jump crosses C frames only. Warnings are not printed.
#include <png.h>

#include <csetjmp>
#include <cstring>

#include "image/decoders.h"

namespace systolic::image {
namespace {

struct Job {
  png_structp png = nullptr;
  png_infop info = nullptr;
  std::jmp_buf jump;
  char message[256] = {};
  const uint8_t* data = nullptr;
  std::size_t size = 0, pos = 0;
  int passes = 1;
};

[[noreturn]] void on_error(png_structp png, png_const_charp msg) {
  auto* job = static_cast<Job*>(png_get_error_ptr(png));
  std::strncpy(job->message, msg, sizeof job->message - 1);
  std::longjmp(job->jump, 1);
}
void on_warning(png_structp, png_const_charp) {}

void read_bytes(png_structp png, png_bytep dst, png_size_t n) {
  auto* job = static_cast<Job*>(png_get_io_ptr(png));
  if (job->size - job->pos < n) png_error(png, "file is truncated");
  std::memcpy(dst, job->data + job->pos, n);
  job->pos += n;
}

// Phase 1: header, and the transforms that make every layout 8-bit RGB as PIL's convert("RGB")
// does: palette expanded, low bit depths scaled to 0..255, 16 bits cut to the high byte,
// gray replicated, alpha (and tRNS transparency) dropped without compositing.
bool read_header(Job* job, uint32_t* width, uint32_t* height) {
  if (setjmp(job->jump)) return false;
  png_set_read_fn(job->png, job, read_bytes);
  png_read_info(job->png, job->info);
  int depth = 0, color = 0, interlace = 0;
  png_get_IHDR(job->png, job->info, width, height, &depth, &color, &interlace, nullptr, nullptr);
  if (depth == 16) png_set_strip_16(job->png);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(job->png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(job->png);
  // Expanding a palette also turns tRNS into an alpha channel, which goes too.
  if ((color & PNG_COLOR_MASK_ALPHA) || png_get_valid(job->png, job->info, PNG_INFO_tRNS)) png_set_strip_alpha(job->png);
  if (!(color & PNG_COLOR_MASK_COLOR)) png_set_gray_to_rgb(job->png);
  job->passes = png_set_interlace_handling(job->png);
  png_read_update_info(job->png, job->info);
  return true;
}

// Phase 2: every row of every pass into dst, then the chunks after the image up to IEND
// (their CRCs are checked, and a file cut short after the pixels is an error too).
bool read_pixels(Job* job, uint8_t* dst, std::size_t stride, uint32_t height) {
  if (setjmp(job->jump)) return false;
  for (int pass = 0; pass < job->passes; ++pass)
    for (uint32_t y = 0; y < height; ++y) png_read_row(job->png, dst + y * stride, nullptr);
  png_read_end(job->png, nullptr);
  return true;
}

}  // namespace

Status decode_png(const uint8_t* data, std::size_t size, Image* out) {
  Job job;
  job.data = data;
  job.size = size;
  job.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &job, on_error, on_warning);
  if (!job.png) return Err("PNG: libpng could not be initialised");
  job.info = png_create_info_struct(job.png);
  Status st;
  uint32_t width = 0, height = 0;
  if (!job.info) {
    st = Err("PNG: libpng could not be initialised");
  } else if (!read_header(&job, &width, &height)) {
    st = Err("corrupt PNG: %s", job.message);
  } else {
    st = prepare_output(width, height, "PNG", out);
    if (st.ok() && png_get_rowbytes(job.png, job.info) != static_cast<std::size_t>(width) * 3)
      st = Err("PNG: unexpected row size %zu for width %u", static_cast<std::size_t>(png_get_rowbytes(job.png, job.info)),
               width);
    if (st.ok() && !read_pixels(&job, out->rgb.data(), static_cast<std::size_t>(width) * 3, height))
      st = Err("corrupt PNG: %s", job.message);
  }
  png_destroy_read_struct(&job.png, job.info ? &job.info : nullptr, nullptr);
  return st;
}

}  // namespace systolic::image
