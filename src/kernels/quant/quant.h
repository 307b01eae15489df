// Quantize / dequantize family contract (per tensor, uint8; ONNX QuantizeLinear and
// DequantizeLinear semantics):
//
//   quantize:   t = x / scale;  t = min(max(t, -zp), 255 - zp);  y = rne(t) + zp
//   dequantize: y = (float(x) - float(zp)) * scale
//   round:      x = (rne(min(max(x / scale, -zp), 255 - zp)) + 0) * scale in place: both in one pass
//               (a QDQ model's rounding of a float tensor to its uint8 grid; an int8 conv's float
//               output gets it after the kernel)
//   quantize_nhwc: quantize of an [N][C][HW] tensor written as [N][HW][C]: a float NCHW model
//               input read by NHWC int8 kernels, one pass where quantize then reorder took two
//               (an RGB image's 3-channel reorder byte by byte cost twice the quantize)
// Layout-blind (element-wise). Every kernel does these float operations, so all give the
// reference's bytes; the work is split over the pool in blocks of kQuantBlock elements.
#pragma once
#include <pthreadpool.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/cpu.h"

namespace systolic::kernels {

constexpr int64_t kQuantBlock = 1 << 16;

struct QuantKernel {
  const char* name;
  bool (*accepts)(const CpuFeatures&, std::string* why);
  void (*quantize)(const float* x, uint8_t* y, int64_t n, float scale, int32_t zp, pthreadpool_t);
  void (*dequantize)(const uint8_t* x, float* y, int64_t n, float scale, int32_t zp, pthreadpool_t);
  void (*round)(float* x, int64_t n, float scale, int32_t zp, pthreadpool_t);
  void (*quantize_nhwc)(const float* x, uint8_t* y, int64_t n, int64_t c, int64_t hw, float scale, int32_t zp,
                        pthreadpool_t);
};

// Pixels per pool task of quantize_nhwc.
constexpr int64_t kQuantNhwcPixels = 4096;

const QuantKernel* quant_kernels(std::size_t* count);
const QuantKernel* quant_select(const CpuFeatures&, std::string* log = nullptr);

// Scalar forms (the reference; the vector kernels' tails).
void quantize_u8_n(const float* x, uint8_t* y, int64_t n, float scale, int32_t zp);
void dequantize_u8_n(const uint8_t* x, float* y, int64_t n, float scale, int32_t zp);
void round_u8_grid_n(float* x, int64_t n, float scale, int32_t zp);

}  // namespace systolic::kernels
