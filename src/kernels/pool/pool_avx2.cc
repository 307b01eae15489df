// AVX2 (8-channel vectors) NHWC max/avg pooling run.
#include "kernels/gemm/vec_avx2.h"
#include "kernels/pool/pool_impl.h"

namespace systolic::kernels {

void pool_avx2_run(const PoolParams& p, const float* src, float* dst, pthreadpool_t pool) {
  pool::run<VecAvx2>(p, src, dst, pool);
}

}  // namespace systolic::kernels
