// Reference table lookup (scalar), and the kernel list with its dispatch.
#include <algorithm>
#include <span>

#include "base/threadpool.h"
#include "kernels/qlut/qlut.h"

namespace systolic::kernels {

void qlut_n(const uint8_t* table, const uint8_t* x, uint8_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = table[x[i]];
}

namespace {

bool ref_accepts(const CpuFeatures&, std::string*) { return true; }

void ref_apply(const uint8_t* table, const uint8_t* x, uint8_t* y, int64_t n, pthreadpool_t pool) {
  pthreadpool_parallelize_1d(pool, [&](std::size_t b) {
    const int64_t i = int64_t(b) * kQLutBlock;
    qlut_n(table, x + i, y + i, std::min(kQLutBlock, n - i));
  }, std::size_t((n + kQLutBlock - 1) / kQLutBlock), kPoolFlags);
}

void ref_rows(const uint8_t* table, uint8_t* y, int64_t n, int64_t rows, int64_t stride) {
  for (int64_t r = 0; r < rows; ++r) qlut_n(table, y + r * stride, y + r * stride, n);
}

}  // namespace

extern const QLutKernel qlut_u8_ref = {"qlut_u8_ref", ref_accepts, ref_apply, ref_rows};

#define SYSTOLIC_QLUT_KERNEL(k) extern const QLutKernel k;
#include "kernels/qlut/qlut.inc"
#undef SYSTOLIC_QLUT_KERNEL

const QLutKernel* qlut_kernels(std::size_t* count) {
  static const QLutKernel kKernels[] = {
#define SYSTOLIC_QLUT_KERNEL(k) k,
#include "kernels/qlut/qlut.inc"
#undef SYSTOLIC_QLUT_KERNEL
  };
  *count = sizeof(kKernels) / sizeof(kKernels[0]);
  return kKernels;
}

const QLutKernel* qlut_select(const CpuFeatures& cpu, std::string* log) {
  std::size_t n;
  const QLutKernel* all = qlut_kernels(&n);
  for (const QLutKernel& k : std::span(all, n)) {
    std::string why;
    if (k.accepts(cpu, &why)) return &k;
    if (log) *log += std::string("kernel ") + k.name + " rejected: " + why + "\n";
  }
  return nullptr;
}

}  // namespace systolic::kernels
