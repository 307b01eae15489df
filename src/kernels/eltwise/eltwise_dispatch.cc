// The element-wise kernel list (from eltwise.inc) and dispatch: first kernel that accepts, with reasons.
#include <span>

#include "kernels/eltwise/eltwise.h"

namespace systolic::kernels {

#define SYSTOLIC_ELTWISE_KERNEL(k) extern const EltwiseKernel k;
#include "kernels/eltwise/eltwise.inc"
#undef SYSTOLIC_ELTWISE_KERNEL

// A function-local copy: built on first use, after the (constant-initialized) entries.
const EltwiseKernel* eltwise_kernels(std::size_t* count) {
  static const EltwiseKernel kKernels[] = {
#define SYSTOLIC_ELTWISE_KERNEL(k) k,
#include "kernels/eltwise/eltwise.inc"
#undef SYSTOLIC_ELTWISE_KERNEL
  };
  *count = sizeof(kKernels) / sizeof(kKernels[0]);
  return kKernels;
}

const EltwiseKernel* eltwise_select(const EltwiseParams& p, const CpuFeatures& cpu, std::string* log) {
  std::size_t n;
  const EltwiseKernel* all = eltwise_kernels(&n);
  for (const EltwiseKernel& k : std::span(all, n)) {
    std::string why;
    if (k.accepts(p, cpu, &why)) return &k;
    if (log) *log += std::string("kernel ") + k.name + " rejected: " + why + "\n";
  }
  return nullptr;
}

const EltwiseKernel* eltwise_find(const std::string& name) {
  std::size_t n;
  const EltwiseKernel* all = eltwise_kernels(&n);
  for (const EltwiseKernel& k : std::span(all, n))
    if (name == k.name) return &k;
  return nullptr;
}

}  // namespace systolic::kernels
