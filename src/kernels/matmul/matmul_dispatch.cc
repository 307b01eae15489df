// The matmul kernel list (from matmul.inc) and dispatch: first kernel that accepts, with reasons.
#include <span>

#include "kernels/matmul/matmul.h"

namespace systolic::kernels {

#define SYSTOLIC_MATMUL_KERNEL(k) extern const MatMulKernel k;
#include "kernels/matmul/matmul.inc"
#undef SYSTOLIC_MATMUL_KERNEL

// A function-local copy: built on first use, after the (constant-initialized) entries.
const MatMulKernel* matmul_kernels(std::size_t* count) {
  static const MatMulKernel kKernels[] = {
#define SYSTOLIC_MATMUL_KERNEL(k) k,
#include "kernels/matmul/matmul.inc"
#undef SYSTOLIC_MATMUL_KERNEL
  };
  *count = sizeof(kKernels) / sizeof(kKernels[0]);
  return kKernels;
}

const MatMulKernel* matmul_select(const MatMulParams& p, const CpuFeatures& cpu, std::string* log) {
  std::size_t n;
  const MatMulKernel* all = matmul_kernels(&n);
  for (const MatMulKernel& k : std::span(all, n)) {
    std::string why;
    if (k.accepts(p, cpu, &why)) return &k;
    if (log) *log += std::string("kernel ") + k.name + " rejected: " + why + "\n";
  }
  return nullptr;
}

const MatMulKernel* matmul_find(const std::string& name) {
  std::size_t n;
  const MatMulKernel* all = matmul_kernels(&n);
  for (const MatMulKernel& k : std::span(all, n))
    if (name == k.name) return &k;
  return nullptr;
}

MatMulParams matmul_dense(int64_t batch, int64_t m, int64_t n, int64_t k, bool a_bcast, bool b_bcast) {
  MatMulParams p;
  p.batch = batch, p.m = m, p.n = n, p.k = k;
  p.lda = k, p.ldb = n, p.ldc = n;
  p.a_batch = a_bcast ? 0 : m * k;
  p.b_batch = b_bcast ? 0 : k * n;
  p.c_batch = m * n;
  return p;
}

}  // namespace systolic::kernels
