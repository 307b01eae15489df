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

void ref_rows(const uint8_t* table, const uint8_t* x, int64_t xs, uint8_t* y, int64_t ys, int64_t n, int64_t rows) {
  for (int64_t r = 0; r < rows; ++r) qlut_n(table, x + r * xs, y + r * ys, n);
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

void qlut_parts(const QLutKernel& k, const QLutPart* parts, int count, int64_t rows, pthreadpool_t pool) {
  int64_t row_bytes = 0;
  for (int i = 0; i < count; ++i) row_bytes += parts[i].n;
  if (rows <= 0 || row_bytes <= 0) return;
  const int64_t per = std::max<int64_t>(1, (16 << 10) / row_bytes);
  pthreadpool_parallelize_1d(pool, [&](std::size_t b) {
    const int64_t r0 = int64_t(b) * per, nr = std::min(per, rows - r0);
    for (int i = 0; i < count; ++i) {
      const QLutPart& q = parts[i];
      k.rows(q.table, q.x + r0 * q.xs, q.xs, q.y + r0 * q.ys, q.ys, q.n, nr);
    }
  }, std::size_t((rows + per - 1) / per), kPoolFlags);
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
