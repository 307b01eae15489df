// uint8 element-wise family contract (quantized tensors, per-tensor parameters):
//
//   add:      t = (float(a) - a_zp) * a_scale + (float(b) - b_zp) * b_scale;
//             t = min(max(t, lo), hi);  y = rne(t) + y_zp        (scales are a_s / y_s, b_s / y_s;
//             lo >= -y_zp and hi <= 255 - y_zp, an activation's clamp folded in)
//   requant:  y = rne(min(max((float(x) - x_zp) * scale, -y_zp), 255 - y_zp)) + y_zp (a
//             Concat's input into its channel slice: a function of one byte, so the runtime
//             runs it as a table built with qrequant_n, kernels/qlut; no vector form here)
//   scale:    m[i][c] = ((float(g[i][c]) - g_zp) * g_scale) * ratio  (ratio = x_s / y_s);
//             y = rne(min(max((float(x) - x_zp) * m, -y_zp), 255 - y_zp)) + y_zp, x an
//             [n][hw][c] (nhwc) or [n][c][hw] tensor, g one gate per image and channel (or one
//             per channel, shared): a squeeze-excitation block's Mul
// add is layout-blind. Every kernel does these float operations in this order,
// so all give the reference's bytes (files of kernels/q* build with -ffp-contract=off).
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

struct QScaleParams {
  int64_t n = 0, hw = 0, c = 0;
  bool nhwc = true;
  bool gate_per_image = true;  // g is [n][c]; false: [c], the same for every image
  float g_scale = 1.f, ratio = 1.f;
  int32_t g_zp = 0, x_zp = 0, y_zp = 0;
};

struct QEltwiseKernel {
  const char* name;
  bool (*accepts)(const CpuFeatures&, std::string* why);
  void (*add)(const QAddParams&, const uint8_t* a, const uint8_t* b, uint8_t* y, pthreadpool_t);
  // m: the caller's n * c floats, where the multipliers go (no allocation on the run path).
  void (*scale)(const QScaleParams&, const uint8_t* x, const uint8_t* g, float* m, uint8_t* y, pthreadpool_t);
};

const QEltwiseKernel* qeltwise_kernels(std::size_t* count);
const QEltwiseKernel* qeltwise_select(const CpuFeatures&, std::string* log = nullptr);

// Scalar forms (the reference; the vector kernels' tails).
void qadd_n(const QAddParams& p, const uint8_t* a, const uint8_t* b, uint8_t* y, int64_t n);
void qrequant_n(const QRequantParams& p, const uint8_t* x, uint8_t* y, int64_t n);
// scale's multiplier of image i, channel c.
float qscale_multiplier(const QScaleParams& p, const uint8_t* g, int64_t i, int64_t c);
// y[k] = requant((x[k] - x_zp) * m[k]) for k < n (NHWC: a pixel's channels); m[k] = m0 when
// m is null (plain: a channel's pixels).
void qscale_n(const QScaleParams& p, const uint8_t* x, const float* m, float m0, uint8_t* y, int64_t n);
// The work of `scale`, split in rows: NHWC a pixel (n * hw rows of c), plain a channel of an
// image (n * c rows of hw): the multipliers computed into m (n * c floats), then each kernel's
// `row` over the pool.
void qscale_rows(const QScaleParams& p, const uint8_t* x, const uint8_t* g, float* m, uint8_t* y, pthreadpool_t pool,
                 void (*row)(const QScaleParams&, const uint8_t* x, const float* m, float m0, uint8_t* y, int64_t n));

}  // namespace systolic::kernels
