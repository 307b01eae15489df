// Reference batched matmul: the test oracle and "matmul_f32_ref" (last fallback, one thread).
#include "kernels/matmul/matmul.h"
#include "kernels/matmul/matmul_util.h"

namespace systolic::kernels {

void matmul_ref(const MatMulParams& p, const float* a, const float* b, float* c) {
  for (int64_t t = 0; t < p.batch; ++t)
    for (int64_t i = 0; i < p.m; ++i) {
      const float* ar = a + t * p.a_batch + i * p.lda;
      float* cr = c + t * p.c_batch + i * p.ldc;
      for (int64_t j = 0; j < p.n; ++j) cr[j] = 0.f;
      for (int64_t k = 0; k < p.k; ++k) {
        const float x = ar[k];
        const float* br = b + t * p.b_batch + k * p.ldb;
        for (int64_t j = 0; j < p.n; ++j) cr[j] += x * br[j];
      }
    }
}

namespace {

bool accepts_ref(const MatMulParams& p, const CpuFeatures&, std::string* why) { return matmul_well_formed(p, why); }

void run_ref(const MatMulParams& p, const float* a, const float* b, float* c, pthreadpool_t) { matmul_ref(p, a, b, c); }

}  // namespace

extern const MatMulKernel matmul_f32_ref = {"matmul_f32_ref", accepts_ref, run_ref};

}  // namespace systolic::kernels
