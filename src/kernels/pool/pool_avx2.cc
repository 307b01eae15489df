// AVX2 (8-channel vectors) NHWC max/avg pooling run, on floats and (max) on bf16 storage.
#include "kernels/gemm/vec_avx2.h"
#include "kernels/pool/pool_impl.h"

namespace systolic::kernels {

void pool_avx2_run(const PoolParams& p, const float* src, float* dst, pthreadpool_t pool) {
  pool::run<VecAvx2>(p, src, dst, pool);
}

void pool_bf16_avx2_run(const PoolParams& p, const float* src, float* dst, pthreadpool_t pool) {
  pool::run<VecAvx2>(p, reinterpret_cast<const uint16_t*>(src), reinterpret_cast<uint16_t*>(dst), pool);
}

}  // namespace systolic::kernels
