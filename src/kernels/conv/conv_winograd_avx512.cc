// AVX-512 Winograd conv runs: the GEMMs on 6 tiles x 64 channels.
// GCC 12 flags the AVX-512 intrinsics' internal _mm512_undefined_* operands once the output
// transform's activation is inlined: a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/conv/conv_winograd.h"
#include "kernels/gemm/vec_avx512.h"

namespace systolic::kernels {

void conv_winograd_f4x3_avx512_run(const ConvParams& p, const ConvArgs& a, pthreadpool_t pool) {
  winograd::run<winograd::F4x3, VecAvx512, 6, 4>(p, a, pool, igemm::kBlockingAvx512);
}

void conv_winograd_f2x3_avx512_run(const ConvParams& p, const ConvArgs& a, pthreadpool_t pool) {
  winograd::run<winograd::F2x3, VecAvx512, 6, 4>(p, a, pool, igemm::kBlockingAvx512);
}

}  // namespace systolic::kernels
