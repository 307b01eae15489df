// Reference quantize / dequantize (scalar), and the kernel list with its dispatch.
#include <algorithm>
#include <cmath>
#include <span>

#include "base/threadpool.h"
#include "kernels/quant/quant.h"

namespace systolic::kernels {

void quantize_u8_n(const float* x, uint8_t* y, int64_t n, float scale, int32_t zp) {
  const float lo = static_cast<float>(-zp), hi = static_cast<float>(255 - zp);
  for (int64_t i = 0; i < n; ++i) {
    const float t = std::fmin(std::fmax(x[i] / scale, lo), hi);
    y[i] = static_cast<uint8_t>(static_cast<int32_t>(std::nearbyint(t)) + zp);
  }
}

void dequantize_u8_n(const uint8_t* x, float* y, int64_t n, float scale, int32_t zp) {
  for (int64_t i = 0; i < n; ++i) y[i] = (static_cast<float>(x[i]) - static_cast<float>(zp)) * scale;
}

void round_u8_grid_n(float* x, int64_t n, float scale, int32_t zp) {
  const float lo = static_cast<float>(-zp), hi = static_cast<float>(255 - zp);
  // + 0: a value rounding to -0 is +0 after dequantize's (q - zp) * scale, and so here.
  for (int64_t i = 0; i < n; ++i) x[i] = (std::nearbyint(std::fmin(std::fmax(x[i] / scale, lo), hi)) + 0.f) * scale;
}

namespace {

bool ref_accepts(const CpuFeatures&, std::string*) { return true; }

void ref_quantize(const float* x, uint8_t* y, int64_t n, float scale, int32_t zp, pthreadpool_t pool) {
  pthreadpool_parallelize_1d(pool, [&](std::size_t b) {
    const int64_t i = int64_t(b) * kQuantBlock;
    quantize_u8_n(x + i, y + i, std::min(kQuantBlock, n - i), scale, zp);
  }, std::size_t((n + kQuantBlock - 1) / kQuantBlock), kPoolFlags);
}

void ref_round(float* x, int64_t n, float scale, int32_t zp, pthreadpool_t pool) {
  pthreadpool_parallelize_1d(pool, [&](std::size_t b) {
    const int64_t i = int64_t(b) * kQuantBlock;
    round_u8_grid_n(x + i, std::min(kQuantBlock, n - i), scale, zp);
  }, std::size_t((n + kQuantBlock - 1) / kQuantBlock), kPoolFlags);
}

void ref_dequantize(const uint8_t* x, float* y, int64_t n, float scale, int32_t zp, pthreadpool_t pool) {
  pthreadpool_parallelize_1d(pool, [&](std::size_t b) {
    const int64_t i = int64_t(b) * kQuantBlock;
    dequantize_u8_n(x + i, y + i, std::min(kQuantBlock, n - i), scale, zp);
  }, std::size_t((n + kQuantBlock - 1) / kQuantBlock), kPoolFlags);
}

void ref_quantize_nhwc(const float* x, uint8_t* y, int64_t n, int64_t c, int64_t hw, float scale, int32_t zp,
                       pthreadpool_t pool) {
  const int64_t blocks = (hw + kQuantNhwcPixels - 1) / kQuantNhwcPixels;
  pthreadpool_parallelize_2d(pool, [&](std::size_t img, std::size_t b) {
    const int64_t p0 = int64_t(b) * kQuantNhwcPixels, p1 = std::min(hw, p0 + kQuantNhwcPixels);
    const float* xi = x + int64_t(img) * c * hw;
    uint8_t* yi = y + int64_t(img) * hw * c;
    for (int64_t p = p0; p < p1; ++p)
      for (int64_t ch = 0; ch < c; ++ch) quantize_u8_n(xi + ch * hw + p, yi + p * c + ch, 1, scale, zp);
  }, std::size_t(n), std::size_t(blocks), kPoolFlags);
}

}  // namespace

extern const QuantKernel quant_u8_ref = {"quant_u8_ref", ref_accepts, ref_quantize, ref_dequantize, ref_round,
                                         ref_quantize_nhwc};

#define SYSTOLIC_QUANT_KERNEL(k) extern const QuantKernel k;
#include "kernels/quant/quant.inc"
#undef SYSTOLIC_QUANT_KERNEL

const QuantKernel* quant_kernels(std::size_t* count) {
  static const QuantKernel kKernels[] = {
#define SYSTOLIC_QUANT_KERNEL(k) k,
#include "kernels/quant/quant.inc"
#undef SYSTOLIC_QUANT_KERNEL
  };
  *count = sizeof(kKernels) / sizeof(kKernels[0]);
  return kKernels;
}

const QuantKernel* quant_select(const CpuFeatures& cpu, std::string* log) {
  std::size_t n;
  const QuantKernel* all = quant_kernels(&n);
  for (const QuantKernel& k : std::span(all, n)) {
    std::string why;
    if (k.accepts(cpu, &why)) return &k;
    if (log) *log += std::string("kernel ") + k.name + " rejected: " + why + "\n";
  }
  return nullptr;
}

}  // namespace systolic::kernels
