// Round to nearest, ties to even (ONNX's Round, QuantizeLinear and requantization), whatever
// the floating-point environment's rounding mode, and saturation to an integer type's range.
#pragma once
#include <cmath>
#include <cstdint>

namespace systolic::interp {

template <typename T>
inline T round_half_even(T v) {
  const T r = std::round(v);  // ties away from zero
  if (std::fabs(v - std::trunc(v)) != T(0.5)) return r;
  return T(2) * std::round(v * T(0.5));  // a tie: the even neighbour
}

// saturate(round_half_even(v) + zero_point) into [qmin, qmax]; NaN, which no integer
// represents, maps to the zero point (the real value 0).
inline int32_t quantize_value(double v, int32_t zero_point, int32_t qmin, int32_t qmax) {
  double q = std::isnan(v) ? zero_point : round_half_even(v) + zero_point;
  q = q < qmin ? qmin : (q > qmax ? qmax : q);
  return static_cast<int32_t>(q);
}

}  // namespace systolic::interp
