// uint8 element-wise family contract (quantized tensors, per-tensor parameters):
//
//   add:      t = (float(a) - a_zp) * a_scale + (float(b) - b_zp) * b_scale;
//             t = min(max(t, lo), hi);  y = rne(t) + y_zp        (scales are a_s / y_s, b_s / y_s;
//             lo >= -y_zp and hi <= 255 - y_zp, an activation's clamp folded in)
//   requant:  y = rne(min(max((float(x) - x_zp) * scale, -y_zp), 255 - y_zp)) + y_zp over a
//             rows x cols block with row strides (a Concat's input into its channel slice)
// Layout-blind. Every kernel does these float operations in this order, so all give the
// reference's bytes (files of kernels/q* build with -ffp-contract=off).
#pragma once
#include <pthreadpool.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/cpu.h"

namespace systolic::kernels {

struct QAddParams {
  int64_t n = 0;
  float a_scale = 1.f, b_scale = 1.f;
  int32_t a_zp = 0, b_zp = 0, y_zp = 0;
  float lo = 0.f, hi = 255.f;
};

struct QRequantParams {
  int64_t rows = 0, cols = 0;
  int64_t src_stride = 0, dst_stride = 0;  // elements between rows
  float scale = 1.f;                       // x_s / y_s
  int32_t x_zp = 0, y_zp = 0;
};

struct QEltwiseKernel {
  const char* name;
  bool (*accepts)(const CpuFeatures&, std::string* why);
  void (*add)(const QAddParams&, const uint8_t* a, const uint8_t* b, uint8_t* y, pthreadpool_t);
  void (*requant)(const QRequantParams&, const uint8_t* x, uint8_t* y, pthreadpool_t);
};

const QEltwiseKernel* qeltwise_kernels(std::size_t* count);
const QEltwiseKernel* qeltwise_select(const CpuFeatures&, std::string* log = nullptr);

// Scalar forms (the reference; the vector kernels' tails).
void qadd_n(const QAddParams& p, const uint8_t* a, const uint8_t* b, uint8_t* y, int64_t n);
void qrequant_n(const QRequantParams& p, const uint8_t* x, uint8_t* y, int64_t n);

}  // namespace systolic::kernels
