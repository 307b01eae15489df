// Reference Lut (internal, int8 plans): the table between two uint8 grids. On uint8 it is the
// lookup; on float, quantize to lut_x (as QuantizeLinear), look up, dequantize from lut_y.
#include <cmath>

#include "interp/eval.h"

namespace systolic::interp {

using ir::DType;

// The table and grids of a Lut node, checked (a plan is read from disk).
Status lut_params(const ir::Node& n, std::vector<uint8_t>* table, float* sx, int32_t* zx, float* sy, int32_t* zy) {
  const std::vector<int64_t> t = n.ints("table");
  auto gx = n.attrs.find("lut_x"), gy = n.attrs.find("lut_y");
  bool ok = t.size() == 256 && gx != n.attrs.end() && gy != n.attrs.end() && gx->second.floats_v.size() == 2 &&
            gy->second.floats_v.size() == 2;
  for (int64_t v : t) ok = ok && v >= 0 && v <= 255;
  if (ok) {
    *sx = gx->second.floats_v[0], *sy = gy->second.floats_v[0];
    const float fx = gx->second.floats_v[1], fy = gy->second.floats_v[1];
    ok = *sx > 0.f && std::isfinite(*sx) && *sy > 0.f && std::isfinite(*sy) && fx >= 0.f && fx <= 255.f &&
         fy >= 0.f && fy <= 255.f && fx == std::nearbyint(fx) && fy == std::nearbyint(fy);
    *zx = static_cast<int32_t>(fx), *zy = static_cast<int32_t>(fy);
  }
  if (!ok) return Err("Lut %s: its table or grids are malformed", n.name.c_str());
  table->assign(t.begin(), t.end());
  return Status::Ok();
}

Status eval_lut(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out) {
  std::vector<uint8_t> table;
  float sx, sy;
  int32_t zx, zy;
  SYSTOLIC_RETURN_IF_ERROR(lut_params(n, &table, &sx, &zx, &sy, &zy));
  if (in.size() != 1 || out.size() != 1 || !in[0].data || !out[0].data || in[0].shape != out[0].shape)
    return Err("Lut %s: needs one input and one output of the same shape", n.name.c_str());
  const TensorRef &x = in[0], &y = out[0];
  const auto typed = [](DType t) { return t == DType::u8 || t == DType::f32; };
  if (!typed(x.dtype) || !typed(y.dtype))
    return Err("Lut %s: element types %s -> %s are not supported (uint8 or float32)", n.name.c_str(),
               ir::dtype_name(x.dtype), ir::dtype_name(y.dtype));
  const float lo = static_cast<float>(-zx), hi = static_cast<float>(255 - zx);
  for (int64_t i = 0, count = x.numel(); i < count; ++i) {
    uint8_t q;
    if (x.dtype == DType::u8) {
      q = x.as<uint8_t>()[i];
    } else {
      const float t = std::fmin(std::fmax(x.as<float>()[i] / sx, lo), hi);
      q = static_cast<uint8_t>(static_cast<int32_t>(std::nearbyint(t)) + zx);
    }
    const uint8_t v = table[q];
    if (y.dtype == DType::u8) y.as<uint8_t>()[i] = v;
    else y.as<float>()[i] = (static_cast<float>(v) - static_cast<float>(zy)) * sy;
  }
  return Status::Ok();
}

}  // namespace systolic::interp
