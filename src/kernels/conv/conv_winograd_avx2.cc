// AVX2+FMA Winograd conv runs: the GEMMs on 6 tiles x 16 channels.
#include "kernels/conv/conv_winograd.h"
#include "kernels/gemm/vec_avx2.h"

namespace systolic::kernels {

void conv_winograd_f4x3_avx2_run(const ConvParams& p, const ConvArgs& a, pthreadpool_t pool) {
  winograd::run<winograd::F4x3, VecAvx2, 6, 2>(p, a, pool, igemm::kBlockingAvx2);
}

void conv_winograd_f2x3_avx2_run(const ConvParams& p, const ConvArgs& a, pthreadpool_t pool) {
  winograd::run<winograd::F2x3, VecAvx2, 6, 2>(p, a, pool, igemm::kBlockingAvx2);
}

}  // namespace systolic::kernels
