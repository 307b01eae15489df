// load_image: an encoded JPEG or PNG decoded, resized and center-cropped into one row of a
// model's uint8 image input.
#include "image/image.h"
#include "systolic/systolic.h"

namespace systolic {

Status load_image(const Model& model, const void* bytes, std::size_t size, uint8_t* row) {
  if (!model.image_input())
    return Err("%s takes tensors, not images; open it with preprocess \"imagenet\"", model.path().c_str());
  if (!bytes || size == 0) return Err("image: no bytes given");
  if (!row) return Err("image: no destination row given");
  // Per thread: decoding and resizing reuse their buffers, and loaders may run in parallel.
  thread_local image::Image decoded;
  thread_local image::Scratch scratch;
  Status st = image::decode(static_cast<const uint8_t*>(bytes), size, &decoded);
  if (!st.ok()) return Err("image: %s", st.message().c_str());
  const ImageSpec& im = model.image();
  st = image::resize_center_crop(decoded, {im.resize, im.crop_h, im.crop_w}, row, &scratch);
  if (!st.ok()) return Err("image (%dx%d): %s", decoded.width, decoded.height, st.message().c_str());
  return Status::Ok();
}

}  // namespace systolic
