// The pool kernel list (from pool.inc) and dispatch: first kernel that accepts, with reasons.
#include "kernels/pool/pool.h"

#include <span>

namespace systolic::kernels {

#define SYSTOLIC_POOL_KERNEL(k) extern const PoolKernel k;
#include "kernels/pool/pool.inc"
#undef SYSTOLIC_POOL_KERNEL

// A function-local copy: built on first use, after the (constant-initialized) entries.
const PoolKernel* pool_kernels(std::size_t* count) {
  static const PoolKernel kKernels[] = {
#define SYSTOLIC_POOL_KERNEL(k) k,
#include "kernels/pool/pool.inc"
#undef SYSTOLIC_POOL_KERNEL
  };
  *count = sizeof(kKernels) / sizeof(kKernels[0]);
  return kKernels;
}

const PoolKernel* pool_select(const PoolParams& p, const CpuFeatures& cpu, std::string* log) {
  std::size_t n;
  const PoolKernel* all = pool_kernels(&n);
  for (const PoolKernel& k : std::span(all, n)) {
    std::string why;
    if (k.accepts(p, cpu, &why)) return &k;
    if (log) *log += std::string("kernel ") + k.name + " rejected: " + why + "\n";
  }
  return nullptr;
}

const PoolKernel* pool_find(const std::string& name) {
  std::size_t n;
  const PoolKernel* all = pool_kernels(&n);
  for (const PoolKernel& k : std::span(all, n))
    if (name == k.name) return &k;
  return nullptr;
}

}  // namespace systolic::kernels
