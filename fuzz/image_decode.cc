// Fuzz target: JPEG/PNG decoding followed by the ImageNet resize + center crop.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "image/image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace systolic::image;
  Image img;
  if (!decode(data, size, &img).ok()) return 0;
  ResizeCrop spec;
  std::vector<uint8_t> out(static_cast<std::size_t>(spec.crop_h) * spec.crop_w * 3);
  Scratch scratch;
  (void)resize_center_crop(img, spec, out.data(), &scratch);
  return 0;
}
