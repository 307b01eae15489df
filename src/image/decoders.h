// Internal to src/image: the per-format decoders decode() dispatches to after sniffing.
#pragma once
#include <cstddef>
#include <cstdint>

#include "image/image.h"

namespace systolic::image {

Status decode_jpeg(const uint8_t* data, std::size_t size, Image* out);
Status decode_png(const uint8_t* data, std::size_t size, Image* out);

// Sizes out->rgb for width x height without giving back capacity; rejects sizes over kMaxPixels.
Status prepare_output(int64_t width, int64_t height, const char* format, Image* out);

}  // namespace systolic::image
