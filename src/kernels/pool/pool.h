// Pooling family contract (2-D, fp32, ONNX MaxPool / AveragePool / Global*Pool semantics).
//
//   max: dst[n,oy,ox,c] = max over window positions inside the input
//   avg: dst[n,oy,ox,c] = sum over window positions inside the input / divisor, where divisor
//        counts the window positions inside [-pad_t, ih+pad_b) x [-pad_l, iw+pad_r) when
//        count_include_pad, else those inside [0, ih) x [0, iw).
//   window of (oy,ox): rows oy*sh - pad_t + ky*dh, cols ox*sw - pad_l + kx*dw.
// Global pools are the kh=ih, kw=iw case. Optimized kernels are NHWC; pool_ref_nchw is the oracle.
#pragma once
#include <pthreadpool.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/cpu.h"

namespace systolic::kernels {

enum class PoolKind : unsigned char { max, avg };

struct PoolParams {
  PoolKind kind = PoolKind::max;
  int n = 1, ih = 1, iw = 1, c = 1;
  int oh = 1, ow = 1;
  int kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;
  bool count_include_pad = false;
  int src_stride = 0, dst_stride = 0;  // NHWC pixel strides, 0 = dense (c)
  // Max pools only: src and dst hold bf16 values (2 bytes each, a float's high half; a bf16
  // plan's stored activations, passes/store_bf16.cc). Exact: a maximum is one of the values.
  bool bf16 = false;
};

struct PoolKernel {
  const char* name;
  bool (*accepts)(const PoolParams&, const CpuFeatures&, std::string* why);
  // With PoolParams::bf16, src and dst point at bf16 values (uint16_t).
  void (*run)(const PoolParams&, const float* src, float* dst, pthreadpool_t);
};

const PoolKernel* pool_kernels(std::size_t* count);
const PoolKernel* pool_select(const PoolParams&, const CpuFeatures&, std::string* log = nullptr);
const PoolKernel* pool_find(const std::string& name);

void pool_ref_nchw(const PoolParams&, const float* src, float* dst);
// A max pool's values and ONNX's Indices output: each maximum's flat position in the whole
// NCHW input (batch and channel included, padding not), the first of equal maxima; with
// `column_major` (storage_order=1) H and W swap places in that position. Values as
// pool_ref_nchw's. Segmentation nets (SegNet, ENet) feed the indices to MaxUnpool.
void pool_max_indices_ref_nchw(const PoolParams&, const float* src, float* dst, int64_t* indices, bool column_major);

}  // namespace systolic::kernels
