// Reference element-wise ops: activations, Round, RoundBf16, arithmetic with numpy broadcasting, variadic
// Min and Max, Cast, Where.
#include <cmath>
#include <type_traits>
#include <cstring>
#include <vector>

#include "interp/dispatch.h"
#include "interp/eval.h"
#include "interp/rounding.h"
#include "ir/half.h"
#include "kernels/epilogue.h"

namespace systolic::interp {
namespace {

using ir::DType;
using ir::Op;

template <typename T>
T binary(Op op, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    // Integers wrap around (two's complement), as in ONNX Runtime: computed unsigned (and at
    // least as wide as unsigned int, so promotion cannot make it signed), since a signed
    // overflow is undefined.
    using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
    switch (op) {
      case Op::Add: return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
      case Op::Sub: return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
      case Op::Mul: return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
      case Op::Div:
        if (b == 0) return T(0);
        if (std::is_signed_v<T> && b == T(-1)) return static_cast<T>(U(0) - static_cast<U>(a));  // MIN / -1
        return static_cast<T>(a / b);
      default: return a;
    }
  } else {
    switch (op) {
      case Op::Add: return a + b;
      case Op::Sub: return a - b;
      case Op::Mul: return a * b;
      case Op::Div: return a / b;
      default: return a;
    }
  }
}

template <typename T>
T unary(const ir::Node& n, T x) {
  const double v = static_cast<double>(x);
  switch (n.op) {
    case Op::Relu: return x > T(0) ? x : T(0);
    case Op::Neg: return static_cast<T>(-v);
    case Op::Abs: return x < T(0) ? static_cast<T>(-v) : x;
    case Op::Exp: return static_cast<T>(std::exp(v));
    case Op::Sqrt: return static_cast<T>(std::sqrt(v));
    case Op::Sigmoid: return static_cast<T>(1.0 / (1.0 + std::exp(-v)));
    case Op::Tanh: return static_cast<T>(std::tanh(v));
    case Op::LeakyRelu: return v < 0 ? static_cast<T>(n.f("alpha", 0.01f) * v) : x;
    case Op::HardSigmoid:
      return static_cast<T>(std::min(1.0, std::max(0.0, n.f("alpha", 0.2f) * v + n.f("beta", 0.5f))));
    case Op::HardSwish: return static_cast<T>(v * std::min(1.0, std::max(0.0, v / 6.0 + 0.5)));
    case Op::Silu: return static_cast<T>(v / (1.0 + std::exp(-v)));
    case Op::Round:
      if constexpr (std::is_floating_point_v<T>) return round_half_even(x);
      else return x;
    case Op::RoundBf16:
      if constexpr (std::is_same_v<T, float>) return kernels::round_bf16(x);
      else return x;
    default: return x;
  }
}

// Min or Max of two values; a NaN wins, as in numpy's minimum and maximum.
template <typename T>
T extreme(bool is_min, T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
  }
  return is_min ? (b < a ? b : a) : (b > a ? b : a);
}

template <typename Src, typename Dst>
void cast_loop(const Src* s, Dst* d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<Dst, uint8_t>) d[i] = static_cast<Dst>(s[i]);
    else d[i] = static_cast<Dst>(s[i]);
  }
}

Status eval_cast(const TensorRef& in, const TensorRef& out) {
  const int64_t n = in.numel();
  // float16 / bfloat16 (ir/half.h): widened exactly, or rounded once from the source's value.
  if (ir::is_half(in.dtype)) {
    std::vector<float> wide(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) wide[i] = ir::half_to_float(in.dtype, in.as<uint16_t>()[i]);
    if (ir::is_half(out.dtype)) {
      for (int64_t i = 0; i < n; ++i) out.as<uint16_t>()[i] = ir::half_from_double(out.dtype, wide[i]);
      return Status::Ok();
    }
    TensorRef f = in;
    f.dtype = DType::f32;
    f.data = wide.data();
    return eval_cast(f, out);
  }
  if (ir::is_half(out.dtype)) {
    return dispatch(in.dtype, [&]<typename S>() {
      for (int64_t i = 0; i < n; ++i) out.as<uint16_t>()[i] = ir::half_from_double(out.dtype, double(in.as<S>()[i]));
      return Status::Ok();
    });
  }
  if (out.dtype == DType::boolean) {
    return dispatch(in.dtype, [&]<typename S>() {
      for (int64_t i = 0; i < n; ++i) out.as<uint8_t>()[i] = in.as<S>()[i] != S(0);
      return Status::Ok();
    });
  }
  return dispatch(in.dtype, [&]<typename S>() {
    return dispatch(out.dtype, [&]<typename D>() {
      cast_loop(in.as<S>(), out.as<D>(), n);
      return Status::Ok();
    });
  });
}

}  // namespace

Status eval_elementwise(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out) {
  const TensorRef& y = out[0];
  switch (n.op) {
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::PRelu:
      return dispatch(y.dtype, [&]<typename T>() {
        const T* a = in[0].as<T>();
        const T* b = in[1].as<T>();
        T* o = y.as<T>();
        if (n.op != Op::PRelu && in[0].shape == in[1].shape) {  // the common case, without index math
          for (int64_t i = 0; i < y.numel(); ++i) o[i] = binary<T>(n.op, a[i], b[i]);
          return Status::Ok();
        }
        if (n.op != Op::PRelu && !y.shape.empty()) {
          // A row (last dim) at a time: each operand's row is contiguous or one broadcast value.
          const std::size_t r = y.shape.size();
          const auto sa = broadcast_strides(in[0].shape, y.shape), sb = broadcast_strides(in[1].shape, y.shape);
          const int64_t len = y.shape[r - 1], da = sa[r - 1], db = sb[r - 1];
          std::vector<int64_t> idx(r, 0);
          int64_t oa = 0, ob = 0;
          for (int64_t e = 0; e < y.numel(); e += len) {
            for (int64_t j = 0; j < len; ++j) o[e + j] = binary<T>(n.op, a[oa + j * da], b[ob + j * db]);
            for (int d = static_cast<int>(r) - 2; d >= 0; --d) {
              oa += sa[d];
              ob += sb[d];
              if (++idx[d] < y.shape[d]) break;
              oa -= sa[d] * y.shape[d];
              ob -= sb[d] * y.shape[d];
              idx[d] = 0;
            }
          }
          return Status::Ok();
        }
        for_each_broadcast(y.shape, {&in[0].shape, &in[1].shape}, [&](int64_t e, const std::vector<int64_t>& off) {
          if (n.op == Op::PRelu) o[e] = a[off[0]] < T(0) ? static_cast<T>(a[off[0]] * b[off[1]]) : a[off[0]];
          else o[e] = binary<T>(n.op, a[off[0]], b[off[1]]);
        });
        return Status::Ok();
      });
    case Op::Equal:
      return dispatch(in[0].dtype, [&]<typename T>() {
        const T* a = in[0].as<T>();
        const T* b = in[1].as<T>();
        for_each_broadcast(y.shape, {&in[0].shape, &in[1].shape}, [&](int64_t e, const std::vector<int64_t>& off) {
          y.as<uint8_t>()[e] = a[off[0]] == b[off[1]];
        });
        return Status::Ok();
      });
    case Op::Where:
      return dispatch(y.dtype, [&]<typename T>() {
        const uint8_t* c = in[0].as<uint8_t>();
        const T* a = in[1].as<T>();
        const T* b = in[2].as<T>();
        for_each_broadcast(y.shape, {&in[0].shape, &in[1].shape, &in[2].shape},
                           [&](int64_t e, const std::vector<int64_t>& off) {
                             y.as<T>()[e] = c[off[0]] ? a[off[1]] : b[off[2]];
                           });
        return Status::Ok();
      });
    case Op::Clip:
      return dispatch(y.dtype, [&]<typename T>() {
        const bool has_lo = in.size() > 1 && in[1].data, has_hi = in.size() > 2 && in[2].data;
        const T lo = has_lo ? in[1].as<T>()[0] : T(0);
        const T hi = has_hi ? in[2].as<T>()[0] : T(0);
        for (int64_t i = 0; i < y.numel(); ++i) {
          T v = in[0].as<T>()[i];
          if (has_lo && v < lo) v = lo;
          if (has_hi && v > hi) v = hi;
          y.as<T>()[i] = v;
        }
        return Status::Ok();
      });
    case Op::Min: case Op::Max:
      return dispatch(y.dtype, [&]<typename T>() {
        std::vector<const ir::Shape*> shapes;
        for (const TensorRef& t : in) {
          if (!t.data && t.numel() > 0) return Err("%s %s: an input is missing", ir::op_name(n.op), n.name.c_str());
          shapes.push_back(&t.shape);
        }
        const bool is_min = n.op == Op::Min;
        for_each_broadcast(y.shape, shapes, [&](int64_t e, const std::vector<int64_t>& off) {
          T v = in[0].as<T>()[off[0]];
          for (std::size_t k = 1; k < in.size(); ++k) v = extreme<T>(is_min, v, in[k].as<T>()[off[k]]);
          y.as<T>()[e] = v;
        });
        return Status::Ok();
      });
    case Op::Cast:
      return eval_cast(in[0], y);
    case Op::Relu: case Op::Neg: case Op::Abs: case Op::Exp: case Op::Sqrt: case Op::Sigmoid:
    case Op::Tanh: case Op::LeakyRelu: case Op::HardSigmoid: case Op::HardSwish: case Op::Round:
    case Op::RoundBf16: case Op::Silu:
      return dispatch(y.dtype, [&]<typename T>() {
        const T* x = in[0].as<T>();
        for (int64_t i = 0; i < y.numel(); ++i) y.as<T>()[i] = unary<T>(n, x[i]);
        return Status::Ok();
      });
    default:
      return Err("no reference implementation for %s", ir::op_name(n.op));
  }
}

}  // namespace systolic::interp
