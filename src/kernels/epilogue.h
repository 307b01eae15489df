// The element-wise tail fused into matrix kernels: y = act(acc + bias[k] + residual).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

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
};

struct Epilogue {
  Act act = Act::none;
  float a = 0.f;  // act parameter: clip min, leaky alpha, hard_sigmoid alpha
  float b = 0.f;  // act parameter: clip max, hard_sigmoid beta
};

inline float apply_act(const Epilogue& e, float x) {
  switch (e.act) {
    case Act::none: return x;
    case Act::relu: return x > 0.f ? x : 0.f;
    case Act::clip: return std::min(std::max(x, e.a), e.b);
    case Act::leaky_relu: return x < 0.f ? e.a * x : x;
    case Act::sigmoid: return 1.f / (1.f + std::exp(-x));
    case Act::hard_sigmoid: return std::min(std::max(e.a * x + e.b, 0.f), 1.f);
    case Act::hard_swish: return x * std::min(std::max(x / 6.f + 0.5f, 0.f), 1.f);
    case Act::tanh: return std::tanh(x);
  }
  return x;
}

}  // namespace systolic::kernels
