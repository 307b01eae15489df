// Batched fp32 matrix multiply family contract (ONNX MatMul of two activations; the caller
// resolves numpy batch broadcasting into batch strides).
//
//   C[t](i,j) = sum_k A[t](i,k) * B[t](k,j),   0 <= t < batch, 0 <= i < m, 0 <= j < n
//   A[t](i,k) = a[t*a_batch + i*lda + k]   (a_batch = 0: one A shared by every batch)
//   B[t](k,j) = b[t*b_batch + k*ldb + j]   (b_batch = 0: one B shared by every batch)
//   C[t](i,j) = c[t*c_batch + i*ldc + j]
// k = 0 writes zeros. C never overlaps A or B. Kernels never allocate. matmul_f32_ref is the oracle.
#pragma once
#include <pthreadpool.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "base/cpu.h"

namespace systolic::kernels {

struct MatMulParams {
  int64_t batch = 1, m = 1, n = 1, k = 1;
  int64_t lda = 1, ldb = 1, ldc = 1;              // row strides (elements): lda >= k, ldb, ldc >= n
  int64_t a_batch = 0, b_batch = 0, c_batch = 0;  // batch strides (elements); 0 broadcasts A or B
};

// Dense row-major matrices, batch strides m*k / k*n / m*n, or 0 where a_bcast / b_bcast.
MatMulParams matmul_dense(int64_t batch, int64_t m, int64_t n, int64_t k, bool a_bcast = false,
                          bool b_bcast = false);

struct MatMulKernel {
  const char* name;
  bool (*accepts)(const MatMulParams&, const CpuFeatures&, std::string* why);
  void (*run)(const MatMulParams&, const float* a, const float* b, float* c, pthreadpool_t);
};

const MatMulKernel* matmul_kernels(std::size_t* count);
const MatMulKernel* matmul_select(const MatMulParams&, const CpuFeatures&, std::string* log = nullptr);
const MatMulKernel* matmul_find(const std::string& name);

// The oracle: a plain loop per (batch, row), k outer so the inner loop runs along C's row.
void matmul_ref(const MatMulParams&, const float* a, const float* b, float* c);

}  // namespace systolic::kernels
