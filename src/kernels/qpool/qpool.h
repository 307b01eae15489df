// uint8 pooling family contract (NHWC, ONNX MaxPool / AveragePool / Global*Pool on quantized
// tensors; window, pads and divisor as in kernels/pool/pool.h).
//
//   max: dst = max of the window's bytes inside the input (the output keeps the input's
//        scale and zero point: max commutes with the monotone quantization)
//   avg: s = sum of the window's bytes inside the input - inside * in_zp (padding is the real
//        value 0);  t = float(s) * (scale / float(divisor));  t = min(max(t, -out_zp), 255 - out_zp);
//        dst = rne(t) + out_zp,  with scale = in_scale / out_scale.
// Every kernel does the float operations in this order, so all give the reference's bytes.
#pragma once
#include <pthreadpool.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/cpu.h"
#include "kernels/pool/pool.h"

namespace systolic::kernels {

struct QPoolArgs {
  const uint8_t* src = nullptr;
  uint8_t* dst = nullptr;
  int32_t in_zp = 0, out_zp = 0;  // avg only
  float scale = 1.f;              // avg only: in_scale / out_scale
};

struct QPoolKernel {
  const char* name;
  bool (*accepts)(const PoolParams&, const CpuFeatures&, std::string* why);
  void (*run)(const PoolParams&, const QPoolArgs&, pthreadpool_t);
};

const QPoolKernel* qpool_kernels(std::size_t* count);
const QPoolKernel* qpool_select(const PoolParams&, const CpuFeatures&, std::string* log = nullptr);
const QPoolKernel* qpool_find(const std::string& name);

// The oracle, on NCHW bytes.
void qpool_ref_nchw(const PoolParams&, const QPoolArgs&);

// The average's requantization of one window sum (out of line, built without ISA flags; the
// vector kernels use it for ragged channel tails).
uint8_t qpool_avg_requant(int32_t sum, int inside, int divisor, const QPoolArgs& a);

}  // namespace systolic::kernels
