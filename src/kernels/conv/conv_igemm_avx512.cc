// AVX-512 implicit-GEMM conv runs: 6 pixels x 64 channels (24 zmm accumulators, fewest loads per
// FMA), 8 x 32 for layers whose channel counts would leave much of a 64-wide panel empty, and
// 14 x 16 for 16 or fewer output channels (a text detector's heads, image stems of 16).
#include "kernels/conv/conv_igemm.h"
#include "kernels/gemm/vec_avx512.h"

namespace systolic::kernels {

void conv_igemm_6x64_avx512_run(const ConvParams& p, const ConvArgs& a, pthreadpool_t pool) {
  igemm::run<VecAvx512, 6, 4>(p, a, pool, igemm::kBlockingAvx512);
}

void conv_igemm_8x32_avx512_run(const ConvParams& p, const ConvArgs& a, pthreadpool_t pool) {
  igemm::run<VecAvx512, 8, 2>(p, a, pool, igemm::kBlockingAvx512);
}

void conv_igemm_14x16_avx512_run(const ConvParams& p, const ConvArgs& a, pthreadpool_t pool) {
  igemm::run<VecAvx512, 14, 1>(p, a, pool, igemm::kBlockingAvx512);
}

}  // namespace systolic::kernels
