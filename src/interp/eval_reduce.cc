// Reference reductions over axes: ReduceSum, ReduceProd, ReduceMean, ReduceMin, ReduceMax, ReduceL1,
// ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare (numeric types), with ONNX's axes
// (attribute, or input 1 from opset 18 and for ReduceSum from 13), keepdims and
// noop_with_empty_axes; and ArgMax/ArgMin (axis, keepdims, select_last_index; int64 indices).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "interp/dispatch.h"
#include "interp/eval.h"

namespace systolic::interp {
namespace {

using ir::DType;
using ir::Op;

// Visits every element of x in order with the offset of the output element it reduces into.
template <typename F>
void for_each_reduced(const ir::Shape& xs, const std::vector<char>& red, F&& f) {
  const int64_t r = static_cast<int64_t>(xs.size());
  const int64_t total = ir::num_elements(xs);
  // Fast path: the reduced dims (ignoring size-1 dims) form one block, so the input is
  // outer x R x inner and the output outer x inner.
  int64_t first = -1, last = -1;
  for (int64_t d = 0; d < r; ++d)
    if (red[d] && xs[d] > 1) {
      if (first < 0) first = d;
      last = d;
    }
  bool block = true;
  for (int64_t d = first; first >= 0 && d <= last; ++d) block = block && (red[d] || xs[d] == 1);
  if (first < 0) {
    for (int64_t e = 0; e < total; ++e) f(e, e);
    return;
  }
  if (block) {
    int64_t outer = 1, R = 1, inner = 1;
    for (int64_t d = 0; d < first; ++d) outer *= xs[d];
    for (int64_t d = first; d <= last; ++d) R *= xs[d];
    for (int64_t d = last + 1; d < r; ++d) inner *= xs[d];
    int64_t e = 0;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < R; ++k)
        for (int64_t i = 0; i < inner; ++i) f(e++, o * inner + i);
    return;
  }
  ir::Shape kept(r);
  for (int64_t d = 0; d < r; ++d) kept[d] = red[d] ? 1 : xs[d];
  const auto kst = broadcast_strides(kept, xs);
  std::vector<int64_t> idx(r, 0);
  int64_t o = 0;
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

// A double result stored as T: integers truncate as numpy's astype, saturating instead of UB.
template <typename T>
T from_double(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    if (std::isnan(v)) return 0;
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
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

// Sum, product, L1 and sum of squares: integers accumulate in 64-bit unsigned arithmetic
// (wrapping like T itself), floats in double.
template <typename T>
Status reduce_additive(Op op, const TensorRef& x, const std::vector<char>& red, const TensorRef& y) {
  using A = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;
  std::vector<A> acc(static_cast<std::size_t>(y.numel()), op == Op::ReduceProd ? A(1) : A(0));
  const T* in = x.as<T>();
  auto val = [&](int64_t e) -> A {
    if constexpr (std::is_floating_point_v<T>) return static_cast<double>(in[e]);
    else return static_cast<A>(static_cast<int64_t>(in[e]));
  };
  switch (op) {
    case Op::ReduceSum: for_each_reduced(x.shape, red, [&](int64_t e, int64_t o) { acc[o] += val(e); }); break;
    case Op::ReduceProd: for_each_reduced(x.shape, red, [&](int64_t e, int64_t o) { acc[o] *= val(e); }); break;
    case Op::ReduceSumSquare:
      for_each_reduced(x.shape, red, [&](int64_t e, int64_t o) { acc[o] += val(e) * val(e); });
      break;
    default:  // ReduceL1
      for_each_reduced(x.shape, red, [&](int64_t e, int64_t o) {
        const T v = in[e];
        if constexpr (std::is_floating_point_v<T>) acc[o] += std::fabs(static_cast<double>(v));
        else if constexpr (std::is_signed_v<T>) acc[o] += v < 0 ? A(0) - static_cast<A>(static_cast<int64_t>(v)) : static_cast<A>(v);
        else acc[o] += static_cast<A>(v);
      });
  }
  T* out = y.as<T>();
  for (std::size_t i = 0; i < acc.size(); ++i) out[i] = static_cast<T>(acc[i]);
  return Status::Ok();
}

// Mean, L2, LogSum and LogSumExp: accumulate in double and finish with a double function.
template <typename T>
Status reduce_real(Op op, const TensorRef& x, const std::vector<char>& red, const TensorRef& y) {
  const std::size_t m = static_cast<std::size_t>(y.numel());
  std::vector<double> acc(m, 0.0), shift(m, 0.0);
  const T* in = x.as<T>();
  if (op == Op::ReduceLogSumExp) {  // subtract the max so exp cannot overflow
    std::fill(shift.begin(), shift.end(), -INFINITY);
    for_each_reduced(x.shape, red, [&](int64_t e, int64_t o) {
      shift[o] = std::max(shift[o], static_cast<double>(in[e]));
    });
    for (double& s : shift)
      if (!std::isfinite(s)) s = 0;  // empty, all -inf, or inf/NaN: the plain formula is right
    for_each_reduced(x.shape, red, [&](int64_t e, int64_t o) {
      acc[o] += std::exp(static_cast<double>(in[e]) - shift[o]);
    });
  } else if (op == Op::ReduceL2) {
    for_each_reduced(x.shape, red, [&](int64_t e, int64_t o) {
      const double v = static_cast<double>(in[e]);
      acc[o] += v * v;
    });
  } else {
    for_each_reduced(x.shape, red, [&](int64_t e, int64_t o) { acc[o] += static_cast<double>(in[e]); });
  }
  const double cnt = m ? static_cast<double>(x.numel()) / static_cast<double>(m) : 0.0;
  T* out = y.as<T>();
  for (std::size_t i = 0; i < m; ++i) {
    double v = acc[i];
    switch (op) {
      case Op::ReduceMean: v /= cnt; break;
      case Op::ReduceL2: v = std::sqrt(v); break;
      case Op::ReduceLogSum: v = std::log(v); break;
      default: v = std::log(v) + shift[i]; break;  // ReduceLogSumExp
    }
    out[i] = from_double<T>(v);
  }
  return Status::Ok();
}

template <typename T>
void arg_extreme(bool is_max, bool last, const T* in, int64_t outer, int64_t len, int64_t inner, int64_t* out) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const T* p = in + o * len * inner + i;
      int64_t best = 0;
      T b = p[0];
      for (int64_t k = 1; k < len; ++k) {
        const T v = p[k * inner];
        bool take;
        if constexpr (std::is_floating_point_v<T>) {
          // NaN counts as the extreme, as numpy's argmax/argmin (first NaN, or last with select_last_index).
          if (std::isnan(v)) take = !std::isnan(b) || last;
          else if (std::isnan(b)) take = false;
          else take = (is_max ? v > b : v < b) || (last && v == b);
        } else {
          take = (is_max ? v > b : v < b) || (last && v == b);
        }
        if (take) {
          best = k;
          b = v;
        }
      }
      out[o * inner + i] = best;
    }
}

Status eval_arg(const ir::Node& n, const TensorRef& x, const TensorRef& y) {
  const int64_t r = static_cast<int64_t>(x.shape.size());
  int64_t axis = n.i("axis", 0);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= std::max<int64_t>(r, 1))
    return Err("%s %s: axis %lld is out of range for a rank-%lld input", ir::op_name(n.op), n.name.c_str(),
               static_cast<long long>(n.i("axis", 0)), static_cast<long long>(r));
  int64_t outer = 1, len = r ? x.shape[axis] : 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
  for (int64_t d = axis + 1; d < r; ++d) inner *= x.shape[d];
  if (y.dtype != DType::i64 || y.numel() != outer * inner)
    return Err("%s %s: the output does not fit the input and axis", ir::op_name(n.op), n.name.c_str());
  if (len == 0 && outer * inner > 0)
    return Err("%s %s: the axis to reduce is empty", ir::op_name(n.op), n.name.c_str());
  if (len == 0) return Status::Ok();
  const bool is_max = n.op == Op::ArgMax, last = n.i("select_last_index", 0) != 0;
  if (x.dtype == DType::boolean)
    return Err("%s %s: element type bool is not supported", ir::op_name(n.op), n.name.c_str());
  return dispatch(x.dtype, [&]<typename T>() {
    arg_extreme<T>(is_max, last, x.as<T>(), outer, len, inner, y.as<int64_t>());
    return Status::Ok();
  });
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
  if (in.empty() || out.empty() || !in[0].data || !out[0].data)
    return Err("%s %s: missing input or output", ir::op_name(n.op), n.name.c_str());
  const TensorRef& x = in[0];
  const TensorRef& y = out[0];
  if (n.op == Op::ArgMax || n.op == Op::ArgMin) return eval_arg(n, x, y);
  std::vector<int64_t> axes = n.ints("axes");
  if (n.i("axes_as_input", 0)) {
    axes.clear();
    if (in.size() > 1 && in[1].dtype != DType::undefined && in[1].numel() > 0) {
      if (!in[1].data) return Err("%s %s: the axes input is missing its data", ir::op_name(n.op), n.name.c_str());
      axes = read_ints(in[1]);
    }
  }
  std::vector<char> red;
  SYSTOLIC_RETURN_IF_ERROR(reduce_dims(n, static_cast<int64_t>(x.shape.size()), axes, &red));
  if (ir::num_elements(reduced_shape(x.shape, red, n.i("keepdims", 1) != 0)) != y.numel() || x.dtype != y.dtype)
    return Err("%s %s: the output does not fit the input and axes", ir::op_name(n.op), n.name.c_str());
  if (x.dtype == DType::boolean)
    return Err("%s %s: element type bool is not supported", ir::op_name(n.op), n.name.c_str());
  const Op op = n.op;
  Status st = dispatch(x.dtype, [&]<typename T>() -> Status {
    switch (op) {
      case Op::ReduceMin: case Op::ReduceMax: return reduce_extreme<T>(op == Op::ReduceMin, x, red, y);
      case Op::ReduceSum: case Op::ReduceProd: case Op::ReduceL1: case Op::ReduceSumSquare:
        return reduce_additive<T>(op, x, red, y);
      case Op::ReduceMean: case Op::ReduceL2: case Op::ReduceLogSum: case Op::ReduceLogSumExp:
        return reduce_real<T>(op, x, red, y);
      default: return Err("no reference reduction for this op");
    }
  });
  if (!st.ok()) return Err("%s %s: %s", ir::op_name(n.op), n.name.c_str(), st.message().c_str());
  return st;
}

}  // namespace systolic::interp
