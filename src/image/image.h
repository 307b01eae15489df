// Images for classification: decoding (JPEG via libjpeg-turbo, PNG via libpng) to 8-bit RGB,
// and torchvision's Resize + CenterCrop as applied to a PIL image, computed only for the crop.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace systolic::image {

struct Image {  // 8-bit RGB, HWC, rows packed (stride = width * 3)
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;
};

// The largest image decode() accepts (width * height); larger ones are rejected before any
// pixel memory is allocated, so a hostile header cannot exhaust memory.
constexpr int64_t kMaxPixels = int64_t{1} << 26;

// Sniffs the format from the bytes: JPEG or PNG; anything else is an error naming what it looks
// like (GIF, WebP, text, ...). Every input becomes RGB the way PIL's convert("RGB") makes it:
// grayscale is replicated; palette is expanded; alpha is dropped (not composited); 16-bit
// samples keep their high byte (PIL does the same for RGB/RGBA/LA; for 16-bit grayscale PIL
// clips the value to 255 instead, which is not followed); interlaced PNGs are handled; CMYK
// and YCCK JPEGs are converted with PIL's formula under Adobe's inverted polarity.
// A corrupt or truncated file is an error: libjpeg's corrupt-data warnings ("premature end
// of JPEG file", "bad Huffman code", ...) count as errors (except stray bytes between the
// last scan and EOI, after every pixel is decoded, and unusable metadata), as do PNG CRC and
// zlib errors in the image data and a missing IEND. Neither library prints anything and no
// longjmp crosses a C++ frame. EXIF orientation is not applied (PIL's open() does not either). `out` is reused: its capacity is kept, so steady-state decoding of images no
// larger than earlier ones does not allocate.
Status decode(const uint8_t* data, std::size_t size, Image* out);
// Reads the file (into a per-thread buffer that is reused) and decodes it; every error
// message starts with the path.
Status decode_file(const std::string& path, Image* out);

// torchvision's Resize(resize_short) + CenterCrop(crop_h, crop_w) on a PIL image:
// - the shorter side becomes resize_short, the longer int(resize_short * long / short);
//   an image whose size already matches is not resampled;
// - resampling is PIL's bilinear with antialiasing (triangle filter whose support widens by
//   the scale factor when downscaling), in PIL's fixed point (22 fractional bits) with the
//   horizontal pass first and its result rounded to uint8, so the output matches PIL's;
// - the crop starts at int(round((h - crop_h) / 2.0)) (Python's round: halves to even);
// - when the crop is larger than the resized image (resize_short < crop), the image is
//   padded with zeros (black) as torchvision's CenterCrop does: left/top padding
//   (crop - size) // 2, the rest right/bottom.
// Only the cropped window is computed. Writes crop_h * crop_w * 3 bytes, HWC RGB, to `out`.
// Sizes are 1..65536; a request needing over 256 MB of scratch is an error.
// `scratch` holds the filter coefficients and the intermediate rows; reusing it across calls
// avoids allocation, and the coefficients are only recomputed when the sizes change.
struct ResizeCrop {
  int resize_short = 256;
  int crop_h = 224, crop_w = 224;
};
struct Scratch {
  std::vector<float> f;    // not used by resize_center_crop: free for a caller's float conversion
  std::vector<uint8_t> u8;  // rows after the horizontal pass
  std::vector<int32_t> i;  // coefficients and bounds of both passes
  std::array<int, 5> key{};  // (src w, src h, resize_short, crop_h, crop_w) `i` was built for
};
Status resize_center_crop(const Image& src, const ResizeCrop& spec, uint8_t* out, Scratch* scratch);

// The resized size resize_center_crop() uses before cropping: {width, height}.
std::array<int, 2> resized_size(int width, int height, int resize_short);

// Test-data writers (libjpeg / libpng encoders), used by tests and tools that make images.
Status encode_jpeg(const Image& img, int quality, std::vector<uint8_t>* out);
Status encode_png(const Image& img, std::vector<uint8_t>* out);

// Writers for the other layouts the decoder must handle.
// JPEG with 1 (grayscale), 3 (RGB, stored as YCbCr) or 4 (CMYK, written as given, so pass
// Adobe-inverted values as Photoshop does) interleaved 8-bit components per pixel.
struct JpegLayout {
  int components = 3;
  int quality = 90;
  bool progressive = false;
};
Status encode_jpeg_samples(const uint8_t* samples, int width, int height, const JpegLayout& layout,
                           std::vector<uint8_t>* out);
// PNG with 1 (gray), 2 (gray + alpha), 3 (RGB) or 4 (RGBA) channels of bit_depth 8 or 16
// (`samples` holds uint8_t or host-order uint16_t values), or grayscale at 1, 2 or 4 bits
// (one uint8_t per sample). A non-empty `palette` (RGB triplets) makes a palette image whose
// samples are indices (bit depth 1-8, channels 1); `palette_alpha` adds a tRNS chunk.
struct PngLayout {
  int channels = 3;
  int bit_depth = 8;
  bool interlaced = false;
  std::vector<uint8_t> palette;
  std::vector<uint8_t> palette_alpha;
};
Status encode_png_samples(const void* samples, int width, int height, const PngLayout& layout,
                          std::vector<uint8_t>* out);

}  // namespace systolic::image
