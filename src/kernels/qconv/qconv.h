// Int8 convolution family contract (2-D, NHWC, u8 activations x s8 weights, exact int32
// accumulation, requantization fused into the epilogue).
//
//   acc[n,oy,ox,k] = bias[k] + sum_{ky,kx,c} x[n, oy*sh - pad_t + ky*dh, ox*sw - pad_l + kx*dw, g*icg + c]
//                                             * w[k, c, ky, kx]
//     g = k / ocg; x u8, w s8, acc int32 (exact); out-of-image reads of x are pad[g*icg + c].
//   The zero points live in bias and pad, so kernels multiply raw bytes:
//     bias[k] = b[k] - sum_{c,ky,kx} zx[c] * w[k,c,ky,kx]   (qconv_fold_bias), pad[c] = zx[c].
//   u8 output:  t = fma(float(acc), scale[k], off)          (off = res_off(rq) with a residual
//                                                             and no mid 1, else 0)
//               [mid 1]    t = fma(rne(min(max(t, mid_lo[0]), mid_hi[0])), mid_scale[0], off)
//                          (off = res_off(rq) with a residual, else 0)
//               [residual] t = fma(float(r), res_scale, t)
//               [mid 2]    t = rne(min(max(t, mid_lo[1]), mid_hi[1])) * mid_scale[1]
//               t = min(max(t, lo), hi);  dst = rne(t) + zp        (lo >= -zp, hi <= 255 - zp)
//               [table]    dst = lut[dst]   (an activation between two uint8 grids fused into the
//                          conv, passes/fuse_lut.cc; kernels look up the rows they just wrote)
//     The mid steps round to the uint8 grids a QDQ model puts on the conv's own output (before
//     its residual add) and before its activation, so a fused conv computes what the model
//     specifies; calibrated plans have none.
//   f32 output: t = float(acc) * scale[k];  with a residual  t = t + r (float);  dst = act(t)
//   The residual's dequantization (r - res_zp) * res_scale is split: its constant res_off =
//   -float(res_zp) * res_scale rides on the multiply before it, its product on one fused
//   multiply-add: two operations where a sub, a multiply and an add were (a ResNet bottleneck
//   end's epilogue is as many vector operations as its dot products).
// Every kernel does these float operations in this order, the fused multiply-adds explicit (the
// family's files are built with -ffp-contract=off: no others), so all of them give the
// reference's bytes exactly.
#pragma once
#include <pthreadpool.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

#include "base/cpu.h"
#include "kernels/conv/conv.h"
#include "kernels/epilogue.h"

namespace systolic::kernels {

// The largest |bias| (accumulator units, before the zero points are folded in) for which every
// kernel's int32 sums stay exact: the window-length bounds (qigemm::kMaxK, qdw::kMaxTaps) leave
// this much room. A bias past it must not be clamped into range (a wrong answer): the quantizer
// widens that channel's weight scale instead, or the conv stays float.
constexpr long kQConvMaxBias = 65536L * 256L;

// The smallest weight scale at which `bias`, in units of input_scale times that scale, stays
// within half of kQConvMaxBias (the largest float where that is past float's range).
inline float qconv_min_weight_scale(float bias, float input_scale) {
  const double s = std::fabs(double(bias)) / (double(input_scale) * (kQConvMaxBias / 2));
  return static_cast<float>(std::min(s, double(std::numeric_limits<float>::max())));
}

struct QConvParams {
  ConvParams conv;  // geometry; pixel strides count elements (bytes for u8, floats for f32)
  int out_f32 = 0;  // 1: dst (and residual) are float, dequantized; 0: u8
};

// The u8 output's requantization (see the contract above).
struct QRequant {
  float res_scale = 1.f;
  int32_t res_zp = 0;
  int mid = 0;  // bit i: mid step i+1 applies
  float mid_lo[2] = {0.f, 0.f}, mid_hi[2] = {0.f, 0.f}, mid_scale[2] = {1.f, 1.f};
  float lo = 0.f, hi = 255.f;
  int32_t zp = 0;
  // The table, or null; lut_rows looks rows of output bytes up (in place here: a kernels/qlut
  // kernel's rows(), the machine's fastest, chosen by the caller).
  const uint8_t* lut = nullptr;
  void (*lut_rows)(const uint8_t* table, const uint8_t* x, int64_t xs, uint8_t* y, int64_t ys, int64_t n,
                   int64_t rows) = nullptr;
  // The steps after mid 2's rounding (scale, clamp, rounding, zero point) as 256 output bytes
  // indexed by that rounding's integer minus mid_lo[1] (qconv_tail_table), or null. Drivers set
  // it for the kernels' own use where a byte permute looks it up (AVX512-VBMI); kernels without
  // one compute the steps.
  const uint8_t* tail = nullptr;
};

// The residual's dequantization constant (the contract's res_off): -res_zp x res_scale, one
// float multiply, the same in every kernel.
inline float res_off(const QRequant& rq) { return -static_cast<float>(rq.res_zp) * rq.res_scale; }

struct QConvArgs {
  const uint8_t* src = nullptr;
  const uint8_t* pad = nullptr;   // [ic]: what out-of-image taps read (the input zero point)
  const void* weights = nullptr;  // packed by the kernel's pack()
  const int32_t* bias = nullptr;  // [oc], zero points folded in (never null)
  const float* scale = nullptr;   // [oc]
  const void* residual = nullptr; // u8 like dst (rq.res_zp, rq.res_scale) or float with out_f32; or null
  void* dst = nullptr;
  QRequant rq;                    // u8 output
  Epilogue ep;                    // f32 output: activation
  void* workspace = nullptr;      // workspace_bytes(), 64-byte aligned
};

struct QConvKernel {
  const char* name;
  // Returns false (and says why in *why) when this kernel cannot run the problem here.
  bool (*accepts)(const QConvParams&, const CpuFeatures&, std::string* why);
  std::size_t (*packed_bytes)(const QConvParams&);
  void (*pack)(const QConvParams&, const int8_t* w_oihw, void* packed);
  std::size_t (*workspace_bytes)(const QConvParams&);
  void (*run)(const QConvParams&, const QConvArgs&, pthreadpool_t);
};

// All kernels, fastest first, reference last (from qconv.inc).
const QConvKernel* qconv_kernels(std::size_t* count);
// First kernel that accepts; appends one line per rejected kernel to *log when given.
const QConvKernel* qconv_select(const QConvParams&, const CpuFeatures&, std::string* log = nullptr);
const QConvKernel* qconv_find(const std::string& name);

// bias[k] - sum over the kernel window of zx[c] * w[k,c,ky,kx]: the zero-point compensation.
// `zx` holds ic entries (one per input channel); `bias` may be null (zero).
void qconv_fold_bias(const ConvParams& p, const int8_t* w_oihw, const int32_t* bias, const uint8_t* zx,
                     int32_t* out);

// The epilogue on n accumulators (bias already added), in the contract's order: the reference
// uses it, and the vector kernels for ragged tails. Out of line and built without ISA flags, so
// no instruction-set file holds a copy for the linker to pick. `res` may be null.
void qconv_requant_n(const int32_t* acc, int n, const float* scale, const uint8_t* res, const QRequant& rq,
                     uint8_t* dst);
void qconv_dequant_n(const int32_t* acc, int n, const float* scale, const float* res, const Epilogue& ep,
                     float* dst);
// QRequant::tail's bytes, by qconv_requant_n's arithmetic: false where mid 2 does not apply or
// its bounds are not integers at most 255 apart (the table then has no meaning).
bool qconv_tail_table(const QRequant& rq, uint8_t table[256]);

// The oracle: plain loops over NCHW tensors with explicit zero points (acc = bias +
// sum (x - zx[c]) * w, padding contributing nothing), then the contract's epilogue.
// dst/residual are u8 NCHW, or float NCHW with out_f32.
void qconv_ref_nchw(const QConvParams&, const uint8_t* src, const uint8_t* zx, const int8_t* w_oihw,
                    const int32_t* bias, const float* scale, const void* residual, const QRequant& rq,
                    const Epilogue& ep, void* dst);

}  // namespace systolic::kernels
