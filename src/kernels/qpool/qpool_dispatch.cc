// The uint8 pool kernel list (from qpool.inc) and dispatch: first kernel that accepts, with reasons.
#include <span>

#include "kernels/qpool/qpool.h"

namespace systolic::kernels {

#define SYSTOLIC_QPOOL_KERNEL(k) extern const QPoolKernel k;
#include "kernels/qpool/qpool.inc"
#undef SYSTOLIC_QPOOL_KERNEL

const QPoolKernel* qpool_kernels(std::size_t* count) {
  static const QPoolKernel kKernels[] = {
#define SYSTOLIC_QPOOL_KERNEL(k) k,
#include "kernels/qpool/qpool.inc"
#undef SYSTOLIC_QPOOL_KERNEL
  };
  *count = sizeof(kKernels) / sizeof(kKernels[0]);
  return kKernels;
}

const QPoolKernel* qpool_select(const PoolParams& p, const CpuFeatures& cpu, std::string* log) {
  std::size_t n;
  const QPoolKernel* all = qpool_kernels(&n);
  for (const QPoolKernel& k : std::span(all, n)) {
    std::string why;
    if (k.accepts(p, cpu, &why)) return &k;
    if (log) *log += std::string("kernel ") + k.name + " rejected: " + why + "\n";
  }
  return nullptr;
}

const QPoolKernel* qpool_find(const std::string& name) {
  std::size_t n;
  const QPoolKernel* all = qpool_kernels(&n);
  for (const QPoolKernel& k : std::span(all, n))
    if (name == k.name) return &k;
  return nullptr;
}

}  // namespace systolic::kernels
