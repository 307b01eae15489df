// Session::Step: one prepared step of a plan (kernel, parameters, resolved pointers),
// shared by session.cc (preparation) and session_run.cc (the run loop and profiles).
#pragma once
#include <vector>

#include "interp/eval.h"
#include "kernels/conv/conv.h"
#include "kernels/eltwise/eltwise.h"
#include "kernels/pool/pool.h"
#include "runtime/session.h"

namespace systolic::runtime {

struct Session::Step {
  enum Kind { conv, pool, reorder, eltwise, interp } kind = interp;
  ir::Node node;  // copy: the interpreter may see a physical (NHWC) view of it
  const kernels::ConvKernel* conv_k = nullptr;
  kernels::ConvParams cp;
  kernels::ConvArgs ca;
  const kernels::PoolKernel* pool_k = nullptr;
  kernels::PoolParams pp;
  const kernels::EltwiseKernel* elt_k = nullptr;
  kernels::EltwiseParams ep;
  const float* src = nullptr;
  const float* src_b = nullptr;
  float* dst = nullptr;
  int64_t dims[4] = {0, 0, 0, 0};
  int to = 0;
  std::vector<interp::TensorRef> ins, outs;
  double flops = 0;
  int64_t bytes = 0;  // inputs + weights + outputs
  double total_ms = 0;
  int64_t runs = 0;
};

// NCHW <-> NHWC for float tensors; `to` = 1 makes NHWC.
void reorder_f32(const float* src, float* dst, const int64_t* d, int to);

}  // namespace systolic::runtime
