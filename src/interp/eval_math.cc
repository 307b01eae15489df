// Reference kernels and shape rules of the math family (ops.inc lists its ops): float math and
// activations, Pow, Mod, logical, comparison and bitwise ops with numpy broadcasting, variadic Sum
// and Mean, CastLike. Transcendental functions run in double and round once to the element type.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "interp/dispatch.h"
#include "interp/eval.h"

namespace systolic::interp {
namespace {

using ir::DType;
using ir::Op;

bool is_float(DType t) { return t == DType::f32 || t == DType::f64; }
bool is_unsigned(DType t) { return t == DType::u8 || t == DType::u16 || t == DType::u32 || t == DType::u64; }
bool is_int(DType t) {
  return is_unsigned(t) || t == DType::i8 || t == DType::i16 || t == DType::i32 || t == DType::i64;
}
bool is_numeric(DType t) { return is_float(t) || is_int(t); }

// Ops defined on float tensors only; Erf, Sign and Shrink also take integers.
bool float_only_unary(Op op) {
  switch (op) {
    case Op::Reciprocal: case Op::Log: case Op::Floor: case Op::Ceil: case Op::Sin: case Op::Cos:
    case Op::Tan: case Op::Asin: case Op::Acos: case Op::Atan: case Op::Sinh: case Op::Cosh:
    case Op::Asinh: case Op::Acosh: case Op::Atanh: case Op::Softplus: case Op::Softsign: case Op::Elu:
    case Op::Selu: case Op::Celu: case Op::ThresholdedRelu: case Op::Mish: case Op::Gelu:
      return true;
    default: return false;
  }
}

// y[i] = f(x[i]) with f computed in double (exact for floats, and the ops that matter need it).
template <typename T, typename F>
void map1(const TensorRef& x, const TensorRef& y, F f) {
  const T* px = x.as<T>();
  T* py = y.as<T>();
  const int64_t n = y.numel();
  for (int64_t i = 0; i < n; ++i) py[i] = static_cast<T>(f(static_cast<double>(px[i])));
}

// y = f(a, b) under numpy broadcasting. Same-size and scalar operands take plain loops; the
// general case walks the output row by row (last dim) with per-input strides.
template <typename A, typename B, typename O, typename F>
void map2(const TensorRef& a, const TensorRef& b, const TensorRef& y, F f) {
  const A* pa = a.as<A>();
  const B* pb = b.as<B>();
  O* po = y.as<O>();
  const int64_t n = y.numel();
  if (n == 0) return;
  const int64_t na = a.numel(), nb = b.numel();
  // An operand with as many elements as the output has the output's layout.
  if (na == n && nb == n) {
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
    return;
  }
  if (na == n && nb == 1) {
    const B s = pb[0];
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], s);
    return;
  }
  if (na == 1 && nb == n) {
    const A s = pa[0];
    for (int64_t i = 0; i < n; ++i) po[i] = f(s, pb[i]);
    return;
  }
  const ir::Shape& out = y.shape;
  const int r = static_cast<int>(out.size());
  const std::vector<int64_t> sa = broadcast_strides(a.shape, out), sb = broadcast_strides(b.shape, out);
  const int64_t inner = r ? out[r - 1] : 1;
  const int64_t ia = r ? sa[r - 1] : 0, ib = r ? sb[r - 1] : 0;
  std::vector<int64_t> idx(r, 0);
  int64_t oa = 0, ob = 0;
  for (int64_t o = 0; o < n; o += inner) {
    if (ia == 1 && ib == 1) {
      for (int64_t j = 0; j < inner; ++j) po[o + j] = f(pa[oa + j], pb[ob + j]);
    } else {
      for (int64_t j = 0; j < inner; ++j) po[o + j] = f(pa[oa + j * ia], pb[ob + j * ib]);
    }
    for (int d = r - 2; d >= 0; --d) {
      ++idx[d];
      oa += sa[d];
      ob += sb[d];
      if (idx[d] < out[d]) break;
      oa -= sa[d] * out[d];
      ob -= sb[d] * out[d];
      idx[d] = 0;
    }
  }
}

double softplus(double v) { return v > 0 ? v + std::log1p(std::exp(-v)) : std::log1p(std::exp(v)); }

template <typename T>
Status eval_unary(const ir::Node& n, const TensorRef& x, const TensorRef& y) {
  switch (n.op) {
    case Op::Erf: map1<T>(x, y, [](double v) { return std::erf(v); }); break;
    case Op::Reciprocal: map1<T>(x, y, [](double v) { return 1.0 / v; }); break;
    case Op::Log: map1<T>(x, y, [](double v) { return std::log(v); }); break;
    case Op::Floor: map1<T>(x, y, [](double v) { return std::floor(v); }); break;
    case Op::Ceil: map1<T>(x, y, [](double v) { return std::ceil(v); }); break;
    case Op::Sign:  // NaN stays NaN, as numpy's sign
      map1<T>(x, y, [](double v) { return v > 0 ? 1.0 : v < 0 ? -1.0 : v; });
      break;
    case Op::Sin: map1<T>(x, y, [](double v) { return std::sin(v); }); break;
    case Op::Cos: map1<T>(x, y, [](double v) { return std::cos(v); }); break;
    case Op::Tan: map1<T>(x, y, [](double v) { return std::tan(v); }); break;
    case Op::Asin: map1<T>(x, y, [](double v) { return std::asin(v); }); break;
    case Op::Acos: map1<T>(x, y, [](double v) { return std::acos(v); }); break;
    case Op::Atan: map1<T>(x, y, [](double v) { return std::atan(v); }); break;
    case Op::Sinh: map1<T>(x, y, [](double v) { return std::sinh(v); }); break;
    case Op::Cosh: map1<T>(x, y, [](double v) { return std::cosh(v); }); break;
    case Op::Asinh: map1<T>(x, y, [](double v) { return std::asinh(v); }); break;
    case Op::Acosh: map1<T>(x, y, [](double v) { return std::acosh(v); }); break;
    case Op::Atanh: map1<T>(x, y, [](double v) { return std::atanh(v); }); break;
    case Op::Softplus: map1<T>(x, y, softplus); break;
    case Op::Softsign: map1<T>(x, y, [](double v) { return v / (1.0 + std::fabs(v)); }); break;
    case Op::Mish: map1<T>(x, y, [](double v) { return v * std::tanh(softplus(v)); }); break;
    case Op::Gelu:
      if (n.s("approximate", "none") == "tanh")
        map1<T>(x, y, [](double v) { return 0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))); });
      else
        map1<T>(x, y, [](double v) { return 0.5 * v * (1.0 + std::erf(v * 0.7071067811865476)); });
      break;
    case Op::Elu: {
      const double alpha = n.f("alpha", 1.0f);
      map1<T>(x, y, [=](double v) { return v < 0 ? alpha * std::expm1(v) : v; });
      break;
    }
    case Op::Selu: {
      const double alpha = n.f("alpha", 1.67326319217681884765625f);
      const double gamma = n.f("gamma", 1.05070102214813232421875f);
      map1<T>(x, y, [=](double v) { return v > 0 ? gamma * v : gamma * alpha * std::expm1(v); });
      break;
    }
    case Op::Celu: {
      const double alpha = n.f("alpha", 1.0f);
      map1<T>(x, y, [=](double v) { return std::max(0.0, v) + std::min(0.0, alpha * std::expm1(v / alpha)); });
      break;
    }
    case Op::ThresholdedRelu: {
      const double alpha = n.f("alpha", 1.0f);
      map1<T>(x, y, [=](double v) { return v > alpha ? v : 0.0; });
      break;
    }
    case Op::Shrink: {
      const double bias = n.f("bias", 0.0f), lambd = n.f("lambd", 0.5f);
      map1<T>(x, y, [=](double v) { return v < -lambd ? v + bias : v > lambd ? v - bias : 0.0; });
      break;
    }
    default: return Err("%s %s: no reference implementation", ir::op_name(n.op), n.name.c_str());
  }
  return Status::Ok();
}

// Integer powers by repeated squaring (wrapping like the integer type); negative exponents and
// float operands go through double pow.
template <typename T, typename E>
T pow_elem(T a, E b) {
  if constexpr (std::is_integral_v<T> && std::is_integral_v<E>) {
    if (b >= E(0)) {
      using U = std::make_unsigned_t<T>;
      U r = 1, base = static_cast<U>(a);
      for (uint64_t e = static_cast<uint64_t>(b); e; e >>= 1) {
        if (e & 1) r = static_cast<U>(r * base);
        base = static_cast<U>(base * base);
      }
      return static_cast<T>(r);
    }
  }
  return static_cast<T>(std::pow(static_cast<double>(a), static_cast<double>(b)));
}

template <typename T, typename E>
void eval_pow(const TensorRef& a, const TensorRef& b, const TensorRef& y) {
  if constexpr (std::is_floating_point_v<T>) {
    // A scalar exponent (x^2 in variance and GELU's x^3) takes a dedicated loop.
    if (b.numel() == 1 && a.numel() == y.numel()) {
      const double e = static_cast<double>(b.as<E>()[0]);
      const T* x = a.as<T>();
      T* o = y.as<T>();
      const int64_t n = y.numel();
      if (e == 2.0) {
        for (int64_t i = 0; i < n; ++i) o[i] = x[i] * x[i];
      } else if (e == 1.0) {
        for (int64_t i = 0; i < n; ++i) o[i] = x[i];
      } else if (e == 3.0) {
        for (int64_t i = 0; i < n; ++i) {
          const double v = x[i];
          o[i] = static_cast<T>(v * v * v);
        }
      } else {
        for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(std::pow(static_cast<double>(x[i]), e));
      }
      return;
    }
  }
  map2<T, E, T>(a, b, y, [](T u, E v) { return pow_elem<T, E>(u, v); });
}

// fmod=1: C's fmod (sign of the dividend); fmod=0: sign of the divisor, as Python's %.
// Integer division by zero gives 0 (numpy's result) rather than trapping.
template <typename T>
T mod_elem(T a, T b, bool c_fmod) {
  if constexpr (std::is_floating_point_v<T>) {
    T r = std::fmod(a, b);
    if (!c_fmod && r != T(0) && ((r < T(0)) != (b < T(0)))) r += b;
    return r;
  } else {
    if (b == T(0)) return T(0);
    if constexpr (std::is_signed_v<T>) {
      if (b == T(-1)) return T(0);  // INT_MIN % -1 overflows
    }
    T r = static_cast<T>(a % b);
    if constexpr (std::is_signed_v<T>) {
      if (!c_fmod && r != T(0) && ((r < T(0)) != (b < T(0)))) r = static_cast<T>(r + b);
    }
    return r;
  }
}

template <typename T>
Status eval_compare(Op op, const TensorRef& a, const TensorRef& b, const TensorRef& y) {
  switch (op) {
    case Op::Greater: map2<T, T, uint8_t>(a, b, y, [](T u, T v) -> uint8_t { return u > v; }); break;
    case Op::Less: map2<T, T, uint8_t>(a, b, y, [](T u, T v) -> uint8_t { return u < v; }); break;
    case Op::GreaterOrEqual: map2<T, T, uint8_t>(a, b, y, [](T u, T v) -> uint8_t { return u >= v; }); break;
    case Op::LessOrEqual: map2<T, T, uint8_t>(a, b, y, [](T u, T v) -> uint8_t { return u <= v; }); break;
    default: break;
  }
  return Status::Ok();
}

template <typename T>
Status eval_bitwise(const ir::Node& n, const std::vector<TensorRef>& in, const TensorRef& y) {
  if constexpr (std::is_integral_v<T>) {
    constexpr int bits = 8 * sizeof(T);
    switch (n.op) {
      case Op::BitwiseAnd: map2<T, T, T>(in[0], in[1], y, [](T u, T v) { return static_cast<T>(u & v); }); break;
      case Op::BitwiseOr: map2<T, T, T>(in[0], in[1], y, [](T u, T v) { return static_cast<T>(u | v); }); break;
      case Op::BitwiseXor: map2<T, T, T>(in[0], in[1], y, [](T u, T v) { return static_cast<T>(u ^ v); }); break;
      case Op::BitwiseNot: {
        const T* x = in[0].as<T>();
        for (int64_t i = 0; i < y.numel(); ++i) y.as<T>()[i] = static_cast<T>(~x[i]);
        break;
      }
      case Op::BitShift: {
        // Shifting by the width or more empties the value (C++ leaves it undefined).
        if (n.s("direction", "") == "LEFT")
          map2<T, T, T>(in[0], in[1], y, [](T u, T v) { return v >= T(bits) ? T(0) : static_cast<T>(u << v); });
        else
          map2<T, T, T>(in[0], in[1], y, [](T u, T v) { return v >= T(bits) ? T(0) : static_cast<T>(u >> v); });
        break;
      }
      default: break;
    }
    return Status::Ok();
  } else {
    return Err("%s %s: element type %s is not supported (integer types)", ir::op_name(n.op), n.name.c_str(),
               ir::dtype_name(y.dtype));
  }
}

// Sum and Mean: the output starts as input 0 broadcast, then accumulates the others in order.
template <typename T>
Status eval_variadic(const ir::Node& n, const std::vector<TensorRef>& in, const TensorRef& y) {
  T* o = y.as<T>();
  const int64_t total = y.numel();
  if (total == 0) return Status::Ok();
  if (in[0].numel() == total) {
    std::memcpy(o, in[0].data, static_cast<std::size_t>(total) * sizeof(T));
  } else {
    const T* x = in[0].as<T>();
    for_each_broadcast(y.shape, {&in[0].shape}, [&](int64_t e, const std::vector<int64_t>& off) { o[e] = x[off[0]]; });
  }
  for (std::size_t k = 1; k < in.size(); ++k)
    map2<T, T, T>(y, in[k], y, [](T u, T v) { return static_cast<T>(u + v); });
  if (n.op == Op::Mean && in.size() > 1) {
    const T cnt = static_cast<T>(in.size());
    for (int64_t i = 0; i < total; ++i) o[i] = static_cast<T>(o[i] / cnt);
  }
  return Status::Ok();
}

Status eval_castlike(const TensorRef& x, const TensorRef& y) {
  const int64_t n = x.numel();
  if (y.dtype == DType::boolean) {
    return dispatch(x.dtype, [&]<typename S>() {
      for (int64_t i = 0; i < n; ++i) y.as<uint8_t>()[i] = x.as<S>()[i] != S(0);
      return Status::Ok();
    });
  }
  return dispatch(x.dtype, [&]<typename S>() {
    return dispatch(y.dtype, [&]<typename D>() {
      for (int64_t i = 0; i < n; ++i) y.as<D>()[i] = static_cast<D>(x.as<S>()[i]);
      return Status::Ok();
    });
  });
}

}  // namespace

Status infer_math(const ir::Node& n, const std::vector<TensorRef>& in, std::vector<ir::Shape>* shapes,
                  std::vector<ir::DType>* types) {
  const char* op = ir::op_name(n.op);
  const char* name = n.name.c_str();
  auto need = [&](std::size_t k) -> Status {
    if (in.size() < k) return Err("%s %s needs %zu inputs, has %zu", op, name, k, in.size());
    for (std::size_t i = 0; i < k; ++i)
      if (in[i].dtype == DType::undefined) return Err("%s %s: input %zu is missing", op, name, i);
    return Status::Ok();
  };
  auto bad_type = [&](DType t, const char* allowed) {
    return Err("%s %s: element type %s is not supported (%s)", op, name, ir::dtype_name(t), allowed);
  };
  auto same_types = [&]() -> Status {
    for (std::size_t i = 1; i < in.size(); ++i)
      if (in[i].dtype != in[0].dtype)
        return Err("%s %s: input %zu is %s but input 0 is %s", op, name, i, ir::dtype_name(in[i].dtype),
                   ir::dtype_name(in[0].dtype));
    return Status::Ok();
  };
  // Broadcast shape of all inputs.
  auto bcast = [&](ir::Shape* s) -> Status {
    *s = in[0].shape;
    for (std::size_t i = 1; i < in.size(); ++i) {
      Expected<ir::Shape> r = broadcast_shapes(*s, in[i].shape);
      if (!r.ok()) return Err("%s %s: %s", op, name, r.status().message().c_str());
      *s = *r;
    }
    return Status::Ok();
  };
  ir::Shape shape;
  DType type = DType::undefined;
  switch (n.op) {
    case Op::IsNaN: case Op::IsInf:
      SYSTOLIC_RETURN_IF_ERROR(need(1));
      if (!is_float(in[0].dtype)) return bad_type(in[0].dtype, "float32 or float64");
      shape = in[0].shape;
      type = DType::boolean;
      break;
    case Op::Not:
      SYSTOLIC_RETURN_IF_ERROR(need(1));
      if (in[0].dtype != DType::boolean) return bad_type(in[0].dtype, "bool");
      shape = in[0].shape;
      type = DType::boolean;
      break;
    case Op::BitwiseNot:
      SYSTOLIC_RETURN_IF_ERROR(need(1));
      if (!is_int(in[0].dtype)) return bad_type(in[0].dtype, "integer types");
      shape = in[0].shape;
      type = in[0].dtype;
      break;
    case Op::Pow:
      SYSTOLIC_RETURN_IF_ERROR(need(2));
      if (!is_float(in[0].dtype) && in[0].dtype != DType::i32 && in[0].dtype != DType::i64)
        return bad_type(in[0].dtype, "base float32, float64, int32 or int64");
      if (!is_numeric(in[1].dtype)) return Err("%s %s: exponent type %s is not supported", op, name, ir::dtype_name(in[1].dtype));
      SYSTOLIC_RETURN_IF_ERROR(bcast(&shape));
      type = in[0].dtype;
      break;
    case Op::And: case Op::Or: case Op::Xor:
      SYSTOLIC_RETURN_IF_ERROR(need(2));
      SYSTOLIC_RETURN_IF_ERROR(same_types());
      if (in[0].dtype != DType::boolean) return bad_type(in[0].dtype, "bool");
      SYSTOLIC_RETURN_IF_ERROR(bcast(&shape));
      type = DType::boolean;
      break;
    case Op::Greater: case Op::Less: case Op::GreaterOrEqual: case Op::LessOrEqual:
      SYSTOLIC_RETURN_IF_ERROR(need(2));
      SYSTOLIC_RETURN_IF_ERROR(same_types());
      if (!is_numeric(in[0].dtype) && in[0].dtype != DType::boolean) return bad_type(in[0].dtype, "numeric types");
      SYSTOLIC_RETURN_IF_ERROR(bcast(&shape));
      type = DType::boolean;
      break;
    case Op::Mod:
      SYSTOLIC_RETURN_IF_ERROR(need(2));
      SYSTOLIC_RETURN_IF_ERROR(same_types());
      if (!is_numeric(in[0].dtype)) return bad_type(in[0].dtype, "numeric types");
      SYSTOLIC_RETURN_IF_ERROR(bcast(&shape));
      type = in[0].dtype;
      break;
    case Op::BitShift: {
      SYSTOLIC_RETURN_IF_ERROR(need(2));
      SYSTOLIC_RETURN_IF_ERROR(same_types());
      if (!is_unsigned(in[0].dtype)) return bad_type(in[0].dtype, "unsigned integer types");
      const std::string dir = n.s("direction", "");
      if (dir != "LEFT" && dir != "RIGHT")
        return Err("%s %s: direction must be LEFT or RIGHT, is '%s'", op, name, dir.c_str());
      SYSTOLIC_RETURN_IF_ERROR(bcast(&shape));
      type = in[0].dtype;
      break;
    }
    case Op::BitwiseAnd: case Op::BitwiseOr: case Op::BitwiseXor:
      SYSTOLIC_RETURN_IF_ERROR(need(2));
      SYSTOLIC_RETURN_IF_ERROR(same_types());
      if (!is_int(in[0].dtype)) return bad_type(in[0].dtype, "integer types");
      SYSTOLIC_RETURN_IF_ERROR(bcast(&shape));
      type = in[0].dtype;
      break;
    case Op::Sum: case Op::Mean:
      SYSTOLIC_RETURN_IF_ERROR(need(in.empty() ? 1 : in.size()));
      SYSTOLIC_RETURN_IF_ERROR(same_types());
      if (!is_numeric(in[0].dtype)) return bad_type(in[0].dtype, "numeric types");
      SYSTOLIC_RETURN_IF_ERROR(bcast(&shape));
      type = in[0].dtype;
      break;
    case Op::CastLike:
      SYSTOLIC_RETURN_IF_ERROR(need(2));
      if (!ir::dtype_supported(in[0].dtype)) return bad_type(in[0].dtype, "input");
      if (!ir::dtype_supported(in[1].dtype)) return bad_type(in[1].dtype, "target");
      shape = in[0].shape;
      type = in[1].dtype;
      break;
    default:  // the unary math ops
      SYSTOLIC_RETURN_IF_ERROR(need(1));
      if (n.op == Op::Gelu && n.s("approximate", "none") != "none" && n.s("approximate", "none") != "tanh")
        return Err("%s %s: approximate='%s' is not supported (none or tanh)", op, name, n.s("approximate", "").c_str());
      if (float_only_unary(n.op) ? !is_float(in[0].dtype) : !is_numeric(in[0].dtype))
        return bad_type(in[0].dtype, float_only_unary(n.op) ? "float32 or float64" : "numeric types");
      shape = in[0].shape;
      type = in[0].dtype;
      break;
  }
  shapes->push_back(shape);
  types->push_back(type);
  return Status::Ok();
}

Status eval_math(const ir::Node& n, const std::vector<TensorRef>& in, const std::vector<TensorRef>& out) {
  const char* op = ir::op_name(n.op);
  if (out.empty() || !out[0].data) return Status::Ok();
  const std::size_t arity = (n.op == Op::Sum || n.op == Op::Mean) ? 1 : 0;
  if (in.empty() || in.size() < arity) return Err("%s %s: missing inputs", op, n.name.c_str());
  for (const TensorRef& t : in)
    if (!t.data && t.numel() > 0) return Err("%s %s: an input is missing", op, n.name.c_str());
  const TensorRef& y = out[0];
  auto need2 = [&]() -> Status {
    if (in.size() < 2) return Err("%s %s needs 2 inputs", op, n.name.c_str());
    return Status::Ok();
  };
  switch (n.op) {
    case Op::Pow:
      SYSTOLIC_RETURN_IF_ERROR(need2());
      return dispatch(in[0].dtype, [&]<typename T>() {
        if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>) {
          return dispatch(in[1].dtype, [&]<typename E>() {
            eval_pow<T, E>(in[0], in[1], y);
            return Status::Ok();
          });
        } else {
          return Err("Pow %s: base type %s is not supported", n.name.c_str(), ir::dtype_name(in[0].dtype));
        }
      });
    case Op::Mod: {
      SYSTOLIC_RETURN_IF_ERROR(need2());
      const bool c_fmod = n.i("fmod", 0) != 0;
      return dispatch(y.dtype, [&]<typename T>() {
        map2<T, T, T>(in[0], in[1], y, [=](T u, T v) { return mod_elem<T>(u, v, c_fmod); });
        return Status::Ok();
      });
    }
    case Op::IsNaN: case Op::IsInf: {
      const bool neg = n.i("detect_negative", 1) != 0, pos = n.i("detect_positive", 1) != 0;
      const bool nan = n.op == Op::IsNaN;
      return dispatch(in[0].dtype, [&]<typename T>() {
        if constexpr (std::is_floating_point_v<T>) {
          const T* x = in[0].as<T>();
          uint8_t* o = y.as<uint8_t>();
          for (int64_t i = 0; i < y.numel(); ++i) {
            const T v = x[i];
            o[i] = nan ? std::isnan(v) : std::isinf(v) && (v > 0 ? pos : neg);
          }
          return Status::Ok();
        } else {
          return Err("%s %s: element type %s is not supported", op, n.name.c_str(), ir::dtype_name(in[0].dtype));
        }
      });
    }
    case Op::Not: {
      const uint8_t* x = in[0].as<uint8_t>();
      for (int64_t i = 0; i < y.numel(); ++i) y.as<uint8_t>()[i] = !x[i];
      return Status::Ok();
    }
    case Op::And:
      SYSTOLIC_RETURN_IF_ERROR(need2());
      map2<uint8_t, uint8_t, uint8_t>(in[0], in[1], y, [](uint8_t u, uint8_t v) -> uint8_t { return u && v; });
      return Status::Ok();
    case Op::Or:
      SYSTOLIC_RETURN_IF_ERROR(need2());
      map2<uint8_t, uint8_t, uint8_t>(in[0], in[1], y, [](uint8_t u, uint8_t v) -> uint8_t { return u || v; });
      return Status::Ok();
    case Op::Xor:
      SYSTOLIC_RETURN_IF_ERROR(need2());
      map2<uint8_t, uint8_t, uint8_t>(in[0], in[1], y, [](uint8_t u, uint8_t v) -> uint8_t { return !u != !v; });
      return Status::Ok();
    case Op::Greater: case Op::Less: case Op::GreaterOrEqual: case Op::LessOrEqual:
      SYSTOLIC_RETURN_IF_ERROR(need2());
      return dispatch(in[0].dtype, [&]<typename T>() { return eval_compare<T>(n.op, in[0], in[1], y); });
    case Op::BitShift: case Op::BitwiseAnd: case Op::BitwiseOr: case Op::BitwiseXor:
      SYSTOLIC_RETURN_IF_ERROR(need2());
      return dispatch(y.dtype, [&]<typename T>() { return eval_bitwise<T>(n, in, y); });
    case Op::BitwiseNot:
      return dispatch(y.dtype, [&]<typename T>() { return eval_bitwise<T>(n, in, y); });
    case Op::Sum: case Op::Mean:
      return dispatch(y.dtype, [&]<typename T>() { return eval_variadic<T>(n, in, y); });
    case Op::CastLike:
      SYSTOLIC_RETURN_IF_ERROR(need2());
      return eval_castlike(in[0], y);
    default:
      return dispatch(y.dtype, [&]<typename T>() { return eval_unary<T>(n, in[0], y); });
  }
}

}  // namespace systolic::interp
