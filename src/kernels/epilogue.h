// The element-wise tail fused into matrix kernels: y = round?(act(acc + bias[k] + residual)).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace systolic::kernels {

enum class Act : uint8_t {
  none,
  relu,
  clip,         // min(max(x, a), b)  (ReLU6 is clip 0..6)
  leaky_relu,   // x < 0 ? a*x : x
  sigmoid,
  hard_sigmoid, // clip(a*x + b, 0, 1)
  hard_swish,   // x * clip(x/6 + 1/2, 0, 1)
  tanh,
  gelu,         // x/2 * (1 + erf(x/sqrt(2))); a = 1: the tanh approximation
  silu,         // x * sigmoid(x)
};

struct Epilogue {
  Act act = Act::none;
  float a = 0.f;  // act parameter: clip min, leaky alpha, hard_sigmoid alpha
  float b = 0.f;  // act parameter: clip max, hard_sigmoid beta
  // Last: the stored value is rounded to the nearest bf16 (round_bf16), so the tensor feeds a
  // bf16 matrix op as is. Honored by the fp32 conv and element-wise families; the int8
  // family's float output never sets it.
  bool round_bf16 = false;
};

// x rounded to the nearest bfloat16 (8 significant bits), ties to even, returned as the float
// of the same value: bits + 0x7FFF + (bit 16), low 16 bits cleared. Overflow goes to inf as
// in IEEE rounding; a NaN stays a NaN (made quiet; sign and high payload kept), where the plain
// formula would carry a low payload into an infinity.
inline float round_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) u |= 0x00400000u;
  else u += 0x7FFFu + ((u >> 16) & 1u);
  u &= 0xFFFF0000u;
  std::memcpy(&x, &u, 4);
  return x;
}

// The epilogue's activation, then its bf16 rounding when asked: every scalar path (reference
// kernels, the vector kernels' tails and non-vectorized activations) goes through this.
inline float apply_act(const Epilogue& e, float x) {
  switch (e.act) {
    case Act::none: break;
    case Act::relu: x = x > 0.f ? x : 0.f; break;
    case Act::clip: x = std::min(std::max(x, e.a), e.b); break;
    case Act::leaky_relu: x = x < 0.f ? e.a * x : x; break;
    case Act::sigmoid: x = 1.f / (1.f + std::exp(-x)); break;
    case Act::hard_sigmoid: x = std::min(std::max(e.a * x + e.b, 0.f), 1.f); break;
    case Act::hard_swish: x = x * std::min(std::max(x / 6.f + 0.5f, 0.f), 1.f); break;
    case Act::tanh: x = std::tanh(x); break;
    case Act::silu: x = x * (1.f / (1.f + std::exp(-x))); break;
    case Act::gelu:
      x = e.a != 0.f ? 0.5f * x * (1.f + std::tanh(0.7978845608f * (x + 0.044715f * x * x * x)))
                     : 0.5f * x * (1.f + std::erf(x * 0.70710678f));
      break;
  }
  return e.round_bf16 ? round_bf16(x) : x;
}

}  // namespace systolic::kernels
