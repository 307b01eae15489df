// AVX-512 batched matmul run: 12x32 register tile (24 accumulators of the 32 zmm registers).
#include "kernels/gemm/vec_avx512.h"
#include "kernels/matmul/matmul_impl.h"

namespace systolic::kernels {

void matmul_avx512_run(const MatMulParams& p, const float* a, const float* b, float* c, pthreadpool_t pool) {
  matmul::run<VecAvx512, 12, 2>(p, a, b, c, pool);
}

}  // namespace systolic::kernels
