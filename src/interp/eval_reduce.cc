// Reference reductions over axes: ReduceMean (float32), ReduceMin and ReduceMax (any supported
// type), with ONNX's axes (attribute, or input 1 from opset 18), keepdims and noop_with_empty_axes.
#include <algorithm>
#include <cmath>
#include <limits>

#include "interp/eval.h"

namespace systolic::interp {
namespace {

using ir::DType;
using ir::Op;

// Visits every element of x with the offset of the output element it reduces into.
template <typename F>
void for_each_reduced(const ir::Shape& xs, const std::vector<char>& red, F&& f) {
  const int64_t r = static_cast<int64_t>(xs.size());
  ir::Shape kept(r);
  for (int64_t d = 0; d < r; ++d) kept[d] = red[d] ? 1 : xs[d];
  const auto kst = broadcast_strides(kept, xs);
  std::vector<int64_t> idx(r, 0);
  int64_t o = 0;
  const int64_t total = ir::num_elements(xs);
  for (int64_t e = 0; e < total; ++e) {
    f(e, o);
    for (int64_t d = r - 1; d >= 0; --d) {
      o += kst[d];
      if (++idx[d] < xs[d]) break;
      o -= kst[d] * xs[d];
      idx[d] = 0;
    }
  }
}

template <typename T>
Status reduce_extreme(bool is_min, const TensorRef& x, const std::vector<char>& red, const TensorRef& y) {
  T init;
  if constexpr (std::is_floating_point_v<T>) init = is_min ? INFINITY : -INFINITY;
  else init = is_min ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest();
  T* out = y.as<T>();
  std::fill(out, out + y.numel(), init);
  const T* in = x.as<T>();
  for_each_reduced(x.shape, red, [&](int64_t e, int64_t o) {
    const T v = in[e];
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(v)) {  // NaN wins, as numpy's minimum/maximum
        out[o] = v;
        return;
      }
      if (std::isnan(out[o])) return;
    }
    if (is_min ? v < out[o] : v > out[o]) out[o] = v;
  });
  return Status::Ok();
}

Status reduce_mean(const TensorRef& x, const std::vector<char>& red, const TensorRef& y) {
  std::vector<double> acc(static_cast<std::size_t>(y.numel()), 0.0);
  const float* X = x.as<float>();
  for_each_reduced(x.shape, red, [&](int64_t e, int64_t o) { acc[o] += X[e]; });
  const double cnt = static_cast<double>(x.numel()) / std::max<double>(1, acc.size());
  for (std::size_t i = 0; i < acc.size(); ++i) y.as<float>()[i] = static_cast<float>(acc[i] / cnt);
  return Status::Ok();
}

}  // namespace

Status reduce_dims(const ir::Node& n, int64_t rank, const std::vector<int64_t>& axes, std::vector<char>* red) {
  const bool noop = axes.empty() && n.i("noop_with_empty_axes", 0) != 0;
  red->assign(rank, axes.empty() && !noop ? 1 : 0);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      return Err("%s %s: axis %lld is out of range for a rank-%lld input", ir::op_name(n.op), n.name.c_str(),
                 static_cast<long long>(a), static_cast<long long>(rank));
    (*red)[a < 0 ? a + rank : a] = 1;
  }
  return Status::Ok();
}

ir::Shape reduced_shape(const ir::Shape& xs, const std::vector<char>& red, bool keepdims) {
  ir::Shape o;
  for (std::size_t d = 0; d < xs.size(); ++d) {
    if (!red[d]) o.push_back(xs[d]);
    else if (keepdims) o.push_back(1);
  }
  return o;
}

Status eval_reduce(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out) {
  if (n.op == Op::ArgMax || n.op == Op::ArgMin) return Err("%s %s: not supported yet", ir::op_name(n.op), n.name.c_str());
  const TensorRef& x = in[0];
  const TensorRef& y = out[0];
  std::vector<int64_t> axes = n.ints("axes");
  if (n.i("axes_as_input", 0)) axes = in.size() > 1 && in[1].data ? read_ints(in[1]) : std::vector<int64_t>{};
  std::vector<char> red;
  SYSTOLIC_RETURN_IF_ERROR(reduce_dims(n, static_cast<int64_t>(x.shape.size()), axes, &red));
  if (ir::num_elements(reduced_shape(x.shape, red, n.i("keepdims", 1) != 0)) != y.numel() || x.dtype != y.dtype)
    return Err("%s %s: the output does not fit the input and axes", ir::op_name(n.op), n.name.c_str());
  if (n.op == Op::ReduceMean) {
    if (x.dtype != DType::f32)
      return Err("ReduceMean %s: element type %s is not supported (float32 only)", n.name.c_str(),
                 ir::dtype_name(x.dtype));
    return reduce_mean(x, red, y);
  }
  if (n.op != Op::ReduceMin && n.op != Op::ReduceMax)
    return Err("%s %s: not supported yet", ir::op_name(n.op), n.name.c_str());
  const bool is_min = n.op == Op::ReduceMin;
  switch (x.dtype) {
    case DType::f32: return reduce_extreme<float>(is_min, x, red, y);
    case DType::f64: return reduce_extreme<double>(is_min, x, red, y);
    case DType::i32: return reduce_extreme<int32_t>(is_min, x, red, y);
    case DType::i64: return reduce_extreme<int64_t>(is_min, x, red, y);
    case DType::u8: return reduce_extreme<uint8_t>(is_min, x, red, y);
    case DType::i8: return reduce_extreme<int8_t>(is_min, x, red, y);
    default:
      return Err("%s %s: element type %s is not supported", ir::op_name(n.op), n.name.c_str(),
                 ir::dtype_name(x.dtype));
  }
}

}  // namespace systolic::interp
