// Image input: NormalizeImage, the reference for what fold_input_normalization folds away.
#include "interp/eval.h"

namespace systolic::interp {

Status eval_image(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out) {
  const TensorRef& x = in[0];
  const TensorRef& y = out[0];
  const auto& mean = n.attrs.at("mean").floats_v;
  const auto& stdv = n.attrs.at("std").floats_v;
  if (x.dtype != ir::DType::u8 || y.dtype != ir::DType::f32 || y.shape.size() != 4)
    return Err("NormalizeImage %s: needs a uint8 image and a float output", n.name.c_str());
  // The image is NHWC as decoded; the output is NHWC or NCHW as its tensor is laid out, and the
  // shapes the interpreter sees follow the output's layout.
  const bool nhwc = n.i("out_nhwc", 0) != 0;
  const ir::Shape& s = y.shape;
  const int64_t N = s[0], C = nhwc ? s[3] : s[1], H = nhwc ? s[1] : s[2], W = nhwc ? s[2] : s[3];
  if (static_cast<int64_t>(mean.size()) != C || static_cast<int64_t>(stdv.size()) != C)
    return Err("NormalizeImage %s: %zu mean values for %lld channels", n.name.c_str(), mean.size(),
               static_cast<long long>(C));
  const uint8_t* u = x.as<uint8_t>();
  float* o = y.as<float>();
  for (int64_t b = 0; b < N; ++b)
    for (int64_t q = 0; q < H * W; ++q)
      for (int64_t c = 0; c < C; ++c) {
        const float v = (u[(b * H * W + q) * C + c] / 255.f - mean[c]) / stdv[c];
        o[nhwc ? (b * H * W + q) * C + c : (b * C + c) * H * W + q] = v;
      }
  return Status::Ok();
}

}  // namespace systolic::interp
