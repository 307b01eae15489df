// Element-wise family contract (fp32): one optional binary op with a broadcast b, then an activation.
//
//   y[i] = act(binary ? op(a[i], b[j(i)]) : a[i]),   0 <= i < n
//   op:   add a+b | sub a-b | mul a*b | div a/b | prelu (a < 0 ? a*b : a)
//   j(i): b_mode 0: i                      (b has a's shape)
//         b_mode 1: 0                      (scalar b)
//         b_mode 2: i % channels           (per-channel, channels innermost: NHWC with a [C] operand)
//         b_mode 3: (i / inner) % channels (per-channel, channels outer: NCHW with a [C,1,1] operand)
//         b_mode 4: (i / (inner * channels)) * channels + i % channels
//                                          (per image and channel, channels innermost: NHWC with an
//                                          [N,C,1,1] operand, a batch's squeeze-excitation gates)
//   act:  apply_act(act, .) of kernels/epilogue.h (with act.round_bf16, the result rounded to bf16:
//         RoundBf16 is the unary form with no activation).
// y may alias a (in place); b is read only. Kernels never allocate. eltwise_ref is the oracle.
#pragma once
#include <pthreadpool.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/cpu.h"
#include "kernels/epilogue.h"

namespace systolic::kernels {

enum class BinaryOp : uint8_t { add, sub, mul, div, prelu };

struct EltwiseParams {
  int64_t n = 0;  // elements of the output (and of a)
  BinaryOp op = BinaryOp::add;
  bool binary = false;  // false: unary activation only, b unused (may be null)
  int b_mode = 0;       // 0 same shape, 1 scalar, 2 b[i % channels], 3 b[(i / inner) % channels], 4 per image
  int64_t channels = 1;
  int64_t inner = 1;
  Epilogue act;  // applied after the binary op (or alone when !binary)
};

struct EltwiseKernel {
  const char* name;
  bool (*accepts)(const EltwiseParams&, const CpuFeatures&, std::string* why);
  void (*run)(const EltwiseParams&, const float* a, const float* b, float* y, pthreadpool_t);
};

const EltwiseKernel* eltwise_kernels(std::size_t* count);
const EltwiseKernel* eltwise_select(const EltwiseParams&, const CpuFeatures&, std::string* log = nullptr);
const EltwiseKernel* eltwise_find(const std::string& name);

// The oracle: a scalar loop over apply_act.
void eltwise_ref(const EltwiseParams&, const float* a, const float* b, float* y);

}  // namespace systolic::kernels
