// AVX2+FMA batched matmul run: 6x16 register tile (12 accumulators, 2 B vectors, 1 broadcast).
#include "kernels/gemm/vec_avx2.h"
#include "kernels/matmul/matmul_impl.h"

namespace systolic::kernels {

void matmul_avx2_run(const MatMulParams& p, const float* a, const float* b, float* c, pthreadpool_t pool) {
  matmul::run<VecAvx2, 6, 2>(p, a, b, c, pool);
}

}  // namespace systolic::kernels
