// The norm kernel list (from norm.inc) and dispatch: first kernel that accepts, with reasons.
#include <span>

#include "kernels/norm/norm.h"

namespace systolic::kernels {

#define SYSTOLIC_NORM_KERNEL(k) extern const NormKernel k;
#include "kernels/norm/norm.inc"
#undef SYSTOLIC_NORM_KERNEL

// A function-local copy: built on first use, after the (constant-initialized) entries.
const NormKernel* norm_kernels(std::size_t* count) {
  static const NormKernel kKernels[] = {
#define SYSTOLIC_NORM_KERNEL(k) k,
#include "kernels/norm/norm.inc"
#undef SYSTOLIC_NORM_KERNEL
  };
  *count = sizeof(kKernels) / sizeof(kKernels[0]);
  return kKernels;
}

const NormKernel* norm_select(const NormParams& p, const CpuFeatures& cpu, std::string* log) {
  std::size_t n;
  const NormKernel* all = norm_kernels(&n);
  for (const NormKernel& k : std::span(all, n)) {
    std::string why;
    if (k.accepts(p, cpu, &why)) return &k;
    if (log) *log += std::string("kernel ") + k.name + " rejected: " + why + "\n";
  }
  return nullptr;
}

const NormKernel* norm_find(const std::string& name) {
  std::size_t n;
  const NormKernel* all = norm_kernels(&n);
  for (const NormKernel& k : std::span(all, n))
    if (name == k.name) return &k;
  return nullptr;
}

}  // namespace systolic::kernels
