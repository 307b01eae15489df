// JPEG writing with libjpeg (test data and tools). Errors longjmp to the phase function's
// setjmp, which holds only trivially destructible locals, as in decode_jpeg.cc.
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>

#include "image/image.h"
#include "image/jpeg_error.h"

namespace systolic::image {
namespace {

using jpeg::ErrorManager;
using jpeg::no_output;
using jpeg::on_error;

struct Job {
  jpeg_compress_struct cinfo;
  ErrorManager err;
  unsigned char* buffer;  // malloc'ed by jpeg_mem_dest; freed by the caller
  unsigned long size;
};

bool compress(Job* job, const uint8_t* samples, int width, int height, const JpegLayout& layout) {
  if (setjmp(job->err.jump)) return false;
  jpeg_create_compress(&job->cinfo);
  jpeg_mem_dest(&job->cinfo, &job->buffer, &job->size);
  job->cinfo.image_width = static_cast<JDIMENSION>(width);
  job->cinfo.image_height = static_cast<JDIMENSION>(height);
  job->cinfo.input_components = layout.components;
  job->cinfo.in_color_space = layout.components == 1 ? JCS_GRAYSCALE : layout.components == 4 ? JCS_CMYK : JCS_RGB;
  jpeg_set_defaults(&job->cinfo);  // YCbCr for RGB, Adobe marker for CMYK
  jpeg_set_quality(&job->cinfo, layout.quality, TRUE);
  if (layout.progressive) jpeg_simple_progression(&job->cinfo);
  jpeg_start_compress(&job->cinfo, TRUE);
  const std::size_t stride = static_cast<std::size_t>(width) * layout.components;
  while (job->cinfo.next_scanline < job->cinfo.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(samples + job->cinfo.next_scanline * stride);
    jpeg_write_scanlines(&job->cinfo, &row, 1);
  }
  jpeg_finish_compress(&job->cinfo);
  return true;
}

}  // namespace

Status encode_jpeg_samples(const uint8_t* samples, int width, int height, const JpegLayout& layout,
                           std::vector<uint8_t>* out) {
  if (width <= 0 || height <= 0 || width > 65500 || height > 65500)
    return Err("JPEG: cannot write a %dx%d image", width, height);
  if (layout.components != 1 && layout.components != 3 && layout.components != 4)
    return Err("JPEG: cannot write %d components per pixel (1, 3 or 4)", layout.components);
  if (layout.quality < 1 || layout.quality > 100) return Err("JPEG: quality %d is not in 1..100", layout.quality);
  Job job{};
  job.cinfo.err = jpeg_std_error(&job.err.pub);
  job.err.pub.error_exit = on_error;
  job.err.pub.output_message = no_output;
  Status st;
  if (compress(&job, samples, width, height, layout))
    out->assign(job.buffer, job.buffer + job.size);
  else
    st = Err("JPEG: %s", job.err.message);
  jpeg_destroy_compress(&job.cinfo);
  std::free(job.buffer);
  return st;
}

Status encode_jpeg(const Image& img, int quality, std::vector<uint8_t>* out) {
  if (img.rgb.size() != static_cast<std::size_t>(img.width) * img.height * 3)
    return Err("JPEG: image buffer holds %zu bytes, not %dx%dx3", img.rgb.size(), img.width, img.height);
  JpegLayout layout;
  layout.quality = quality;
  return encode_jpeg_samples(img.rgb.data(), img.width, img.height, layout, out);
}

}  // namespace systolic::image
