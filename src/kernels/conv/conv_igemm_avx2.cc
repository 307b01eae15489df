// AVX2+FMA implicit-GEMM conv run: 6 pixels x 16 channels (12 ymm accumulators) per tile.
#include "kernels/conv/conv_igemm.h"
#include "kernels/gemm/vec_avx2.h"

namespace systolic::kernels {

void conv_igemm_6x16_avx2_run(const ConvParams& p, const ConvArgs& a, pthreadpool_t pool) {
  igemm::run<VecAvx2, 6, 2>(p, a, pool, igemm::kBlockingAvx2);
}

}  // namespace systolic::kernels
