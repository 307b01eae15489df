// AVX-512 (16-channel vectors) NHWC max/avg pooling run, on floats and (max) on bf16 storage.
#include "kernels/gemm/vec_avx512.h"
#include "kernels/pool/pool_impl.h"

namespace systolic::kernels {

void pool_avx512_run(const PoolParams& p, const float* src, float* dst, pthreadpool_t pool) {
  pool::run<VecAvx512>(p, src, dst, pool);
}

void pool_bf16_avx512_run(const PoolParams& p, const float* src, float* dst, pthreadpool_t pool) {
  pool::run<VecAvx512>(p, reinterpret_cast<const uint16_t*>(src), reinterpret_cast<uint16_t*>(dst), pool);
}

}  // namespace systolic::kernels
