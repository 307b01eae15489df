// JPEG decoding with libjpeg-turbo. libjpeg reports errors by calling error_exit, which must not
// return; it longjmps back to a setjmp in one of the small phase functions below. Those hold
// only trivially destructible locals and call nothing but libjpeg, so the jump crosses C
// frames only. Warnings about corrupt data are turned into errors the same way.
#include <csetjmp>
#include <cstdio>
// jpeglib.h needs size_t and FILE declared first.
#include <jerror.h>
#include <jpeglib.h>

#include <cstring>

#include "image/jpeg_error.h"
#include "image/decoders.h"

namespace systolic::image {
namespace {

using jpeg::ErrorManager;
using jpeg::no_output;
using jpeg::on_error;


// Warnings that say nothing about the pixels: metadata we do not use, and stray bytes between
// the last scan and EOI (some cameras write them; every pixel has been decoded by then).
bool harmless_warning(const jpeg_error_mgr& err) {
  const int code = err.msg_code;
  return code == JWRN_JFIF_MAJOR || code == JWRN_ADOBE_XFORM || code == JWRN_BOGUS_ICC ||
         (code == JWRN_EXTRANEOUS_DATA && err.msg_parm.i[1] == 0xD9);
}

// level < 0: a warning. libjpeg substitutes data and goes on (gray blocks after a truncation);
// a half-decoded image must never be classified, so a warning is an error here.
void on_message(j_common_ptr cinfo, int level) {
  if (level >= 0 || harmless_warning(*cinfo->err)) return;
  on_error(cinfo);
}

struct Job {
  jpeg_decompress_struct cinfo;
  ErrorManager err;
  bool cmyk = false;
};

// Phase 1: header and output colour space. Returns false after an error (message in job).
bool read_header(Job* job, const uint8_t* data, std::size_t size) {
  if (setjmp(job->err.jump)) return false;
  jpeg_create_decompress(&job->cinfo);
  jpeg_mem_src(&job->cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&job->cinfo, TRUE);
  // Four components are CMYK or YCCK (libjpeg turns YCCK into CMYK); the rest are decoded
  // straight to RGB (grayscale replicated, YCbCr converted).
  job->cmyk = job->cinfo.num_components == 4;
  job->cinfo.out_color_space = job->cmyk ? JCS_CMYK : JCS_RGB;
  return true;
}

// PIL's CMYK -> RGB (Convert.c cmyk2rgb) on Adobe-inverted samples (PIL reads every 4-component
// JPEG as "CMYK;I"): with c' = 255 - raw c and k' = 255 - raw k, r = (255-k') - c'(255-k')/255,
// with PIL's rounded division by 255.
inline uint8_t muldiv255(int a, int b) {
  const int t = a * b + 128;
  return static_cast<uint8_t>(((t >> 8) + t) >> 8);
}
void cmyk_row_to_rgb(const uint8_t* in, uint8_t* out, int width) {
  for (int x = 0; x < width; ++x, in += 4, out += 3) {
    const int nk = in[3];  // 255 - k' where k' = 255 - raw k
    for (int c = 0; c < 3; ++c) {
      const int cc = 255 - in[c];
      out[c] = static_cast<uint8_t>(nk - muldiv255(cc, nk));
    }
  }
}

// Phase 2: all scanlines into dst (rows of width * 3), through `row4` for CMYK.
bool read_pixels(Job* job, uint8_t* dst, uint8_t* row4) {
  if (setjmp(job->err.jump)) return false;
  jpeg_start_decompress(&job->cinfo);
  const int width = static_cast<int>(job->cinfo.output_width);
  const std::size_t stride = static_cast<std::size_t>(width) * 3;
  while (job->cinfo.output_scanline < job->cinfo.output_height) {
    uint8_t* out_row = dst + job->cinfo.output_scanline * stride;
    JSAMPROW row = job->cmyk ? row4 : out_row;
    if (jpeg_read_scanlines(&job->cinfo, &row, 1) != 1) {
      std::strcpy(job->err.message, "no scanline returned");
      return false;
    }
    if (job->cmyk) cmyk_row_to_rgb(row4, out_row, width);
  }
  jpeg_finish_decompress(&job->cinfo);  // reads up to EOI: a missing end is an error too
  return true;
}

}  // namespace

Status decode_jpeg(const uint8_t* data, std::size_t size, Image* out) {
  thread_local std::vector<uint8_t> row4;  // one CMYK row, reused
  Job job{};
  job.cinfo.err = jpeg_std_error(&job.err.pub);
  job.err.pub.error_exit = on_error;
  job.err.pub.emit_message = on_message;
  job.err.pub.output_message = no_output;
  Status st;
  if (!read_header(&job, data, size)) {
    st = Err("corrupt JPEG: %s", job.err.message);
  } else {
    st = prepare_output(job.cinfo.image_width, job.cinfo.image_height, "JPEG", out);
    if (st.ok() && job.cmyk) row4.resize(static_cast<std::size_t>(out->width) * 4);
    if (st.ok() && !read_pixels(&job, out->rgb.data(), row4.data()))
      st = Err("corrupt JPEG: %s", job.err.message);
  }
  jpeg_destroy_decompress(&job.cinfo);
  return st;
}

}  // namespace systolic::image
