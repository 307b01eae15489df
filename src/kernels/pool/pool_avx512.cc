// AVX-512 (16-channel vectors) NHWC max/avg pooling run.
#include "kernels/gemm/vec_avx512.h"
#include "kernels/pool/pool_impl.h"

namespace systolic::kernels {

void pool_avx512_run(const PoolParams& p, const float* src, float* dst, pthreadpool_t pool) {
  pool::run<VecAvx512>(p, src, dst, pool);
}

}  // namespace systolic::kernels
