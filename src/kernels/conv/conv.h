// Convolution family contract (2-D, fp32, ONNX Conv semantics, fused epilogue).
//
//   dst[n,oy,ox,k] = act( sum_{ky,kx,c} src[n, oy*sh - pad_t + ky*dh, ox*sw - pad_l + kx*dw, g*icg + c]
//                                        * w[k, c, ky, kx]
//                         + bias[k] + residual[n,oy,ox,k] )
//   with g = k / ocg, icg = ic/groups, ocg = oc/groups; out-of-range src reads are 0.
//   With src_u8, src[n,y,x,c] = float(src_u8[n,y,x,c]) - src_offset[c] (dense NHWC bytes).
//   With epilogue.round_bf16, dst is then rounded to the nearest bf16 (kernels/epilogue.h).
//
// Optimized kernels work on NHWC activations (pixel stride given, so a kernel can read a channel
// slice of a bigger tensor or write into one, as Concat needs) and on weights packed at compile
// time by conv_pack(). The reference kernels are the oracle; conv_ref_nchw is the plain ONNX form.
#pragma once
#include <pthreadpool.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/cpu.h"
#include "kernels/epilogue.h"

namespace systolic::kernels {

struct ConvParams {
  int n = 1, ih = 1, iw = 1, ic = 1;  // input
  int oh = 1, ow = 1, oc = 1;         // output (computed by the caller, incl. pads)
  int kh = 1, kw = 1;
  int sh = 1, sw = 1;
  int dh = 1, dw = 1;
  int pad_t = 0, pad_l = 0;
  int groups = 1;
  // NHWC only: elements between consecutive pixels (0 means dense: ic / oc / oc).
  int src_stride = 0, dst_stride = 0, res_stride = 0;
  // 1: the source is a dense uint8 NHWC image batch (ConvArgs::src_u8), read as
  // float(u) - src_offset[c]; out-of-range reads are still 0. This is how a plan folds input
  // normalisation into the first conv: the scale goes into the weights, the shift here.
  int src_u8 = 0;
  // Bits of kBf16Src / kBf16Dst / kBf16Res: that tensor is stored as bf16 (the high 16 bits of
  // each float; it holds bf16 values anyway in a bf16 plan), halving its bytes. Set by the plan
  // (passes/store_bf16.cc) only where the kernel takes it: the AMX bf16 kernel; the others
  // refuse a conv with any bit set (conv_well_formed).
  int bf16_io = 0;
};
constexpr int kBf16Src = 1, kBf16Dst = 2, kBf16Res = 4;

struct ConvArgs {
  const float* src = nullptr;
  const uint8_t* src_u8 = nullptr;     // instead of src when ConvParams::src_u8
  const float* src_offset = nullptr;   // [ic], with src_u8
  const float* weights = nullptr;   // packed by conv_pack for the chosen kernel
  const float* bias = nullptr;      // [oc] or null
  const float* residual = nullptr;  // NHWC like dst, or null; added before act
  float* dst = nullptr;
  Epilogue epilogue;
  float* workspace = nullptr;       // conv_workspace_size() bytes, 64-byte aligned
};

struct ConvKernel {
  const char* name;
  // Returns false (and says why in *why) when this kernel cannot run the problem here.
  bool (*accepts)(const ConvParams&, const CpuFeatures&, std::string* why);
  std::size_t (*packed_floats)(const ConvParams&);
  void (*pack)(const ConvParams&, const float* w_oihw, float* packed);
  std::size_t (*workspace_bytes)(const ConvParams&);
  void (*run)(const ConvParams&, const ConvArgs&, pthreadpool_t);
};

// All kernels, fastest first, reference last (from conv.inc).
const ConvKernel* conv_kernels(std::size_t* count);
// First kernel that accepts; appends one line per rejected kernel to *log when given.
const ConvKernel* conv_select(const ConvParams&, const CpuFeatures&, std::string* log = nullptr);
const ConvKernel* conv_find(const std::string& name);

// Plain NCHW reference with the same math (dense tensors, strides ignored).
void conv_ref_nchw(const ConvParams&, const float* src, const float* w_oihw, const float* bias,
                   const float* residual, const Epilogue&, float* dst);

// The bf16 oracle: the same (sum, bias and residual in double, then the activation in float and
// the output rounded to bf16 when the epilogue asks), with src and w rounded to bf16
// (round_bf16) as they are read. Every bf16-capable kernel (the fp32 ones fed bf16 values, and
// kernels/bconv) is held to it within an fp32-accumulation tolerance.
void conv_ref_bf16_nchw(const ConvParams&, const float* src, const float* w_oihw, const float* bias,
                        const float* residual, const Epilogue&, float* dst);

}  // namespace systolic::kernels
