// float16 / bfloat16 conversions (ir/half.h).
#include "ir/half.h"

#include <bit>
#include <cmath>

namespace systolic::ir {

namespace {

// The formats as (significand bits after the point, exponent bits).
struct Format {
  int man, exp;
};
Format format(DType t) { return t == DType::f16 ? Format{10, 5} : Format{7, 8}; }

}  // namespace

float half_to_float(DType t, uint16_t bits) {
  if (t == DType::bf16) return std::bit_cast<float>(uint32_t(bits) << 16);
  const uint32_t sign = uint32_t(bits & 0x8000u) << 16, e = (bits >> 10) & 0x1Fu, m = bits & 0x3FFu;
  if (e == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (m << 13));
  if (e == 0) return (sign ? -1.f : 1.f) * std::ldexp(float(m), -24);  // zero and subnormals
  return std::bit_cast<float>(sign | ((e + 112) << 23) | (m << 13));
}

uint16_t half_from_double(DType t, double x) {
  const Format f = format(t);
  const int bias = (1 << (f.exp - 1)) - 1, emax_field = (1 << f.exp) - 1;
  const uint16_t sign = std::signbit(x) ? uint16_t(1u << (f.man + f.exp)) : 0;
  const uint16_t inf = uint16_t(emax_field << f.man);
  if (std::isnan(x)) return uint16_t(sign | inf | (1u << (f.man - 1)));
  const double a = std::fabs(x);
  if (std::isinf(a)) return sign | inf;
  if (a == 0) return sign;
  // a = q * 2^(e - man) with q rounded to an integer: e is a's exponent, at least the smallest
  // normal's (below it the step is the subnormals'). Scaling by a power of two is exact, and
  // nearbyint rounds half to even in the default mode.
  int e = std::ilogb(a);
  if (e < 1 - bias) e = 1 - bias;
  double q = std::nearbyint(std::ldexp(a, f.man - e));
  if (q >= std::ldexp(1.0, f.man + 1)) q /= 2, ++e;  // rounded up to the next power of two
  if (e > bias) return sign | inf;
  const auto qi = static_cast<uint32_t>(q);
  if (qi < (1u << f.man)) return uint16_t(sign | qi);  // subnormal (or rounded to zero)
  return uint16_t(sign | (uint32_t(e + bias) << f.man) | (qi - (1u << f.man)));
}

}  // namespace systolic::ir
