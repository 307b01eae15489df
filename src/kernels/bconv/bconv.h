// bf16 convolution family contract (2-D, NHWC, bf16 inputs and weights, fp32 accumulation,
// the fp32 family's fused epilogue).
//
//   dst[n,oy,ox,k] = act( sum_{ky,kx,c} b(src[n, oy*sh - pad_t + ky*dh, ox*sw - pad_l + kx*dw, g*icg + c])
//                                       * b(w[k, c, ky, kx])
//                         + bias[k] + residual[n,oy,ox,k] ),  then b(dst) with epilogue.round_bf16
//   b(x): x rounded to the nearest bfloat16, ties to even (kernels/epilogue.h round_bf16).
//   g = k / ocg; out-of-range src reads are 0. A product of two bf16 values is exact in fp32;
//   the sum is fp32, in an order of the kernel's choosing (vdpbf16ps adds a K pair's two
//   products one after the other; it treats denormal inputs as zero), so kernels agree with
//   conv_ref_bf16_nchw (kernels/conv) within fp32 accumulation error, not bit for bit.
//
// The kernels are ConvKernel entries (ConvParams, ConvArgs: src, bias, residual and dst are
// float; src is rounded as it is gathered) with weights packed "K2": [group][panel][Kp/2][NR][2]
// bf16, K = (ky, kx, c) zero-padded to an even Kp, so that 64 bytes (16 columns x one K pair)
// are one vdpbf16ps operand and one AMX bf16 B-tile row. packed_floats() counts 4-byte words,
// one K pair each. No kernel reads a uint8 image source (ConvParams::src_u8).
//
// A bf16 plan (passes/lower_bf16.cc) takes a kernel of this list where the CPU has vdpbf16ps and
// it measured faster than fp32 FMA (CpuFeatures::bf16_rate); elsewhere the fp32 family runs the
// plan's convs: on the values the plan already rounded (weights at compile time, activations in
// their producers' epilogues) it computes the same sums. The reference (last) is the oracle of
// the K2 packing, never a plan's choice.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "kernels/conv/conv.h"

namespace systolic::kernels {

// All kernels, fastest first, reference last (from bconv.inc).
const ConvKernel* bconv_kernels(std::size_t* count);
// First kernel that accepts; appends one line per rejected kernel to *log when given.
const ConvKernel* bconv_select(const ConvParams&, const CpuFeatures&, std::string* log = nullptr);
const ConvKernel* bconv_find(const std::string& name);
// Whether k is the family's reference kernel (which a plan never picks).
bool bconv_is_reference(const ConvKernel* k);

// The bf16 bits of b(x) (the upper half of round_bf16(x)).
inline uint16_t bf16_bits(float x) {
  const float r = round_bf16(x);
  uint32_t u;
  std::memcpy(&u, &r, 4);
  return static_cast<uint16_t>(u >> 16);
}

inline float bf16_value(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

}  // namespace systolic::kernels
