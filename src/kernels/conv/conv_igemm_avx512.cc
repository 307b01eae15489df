// AVX-512 implicit-GEMM conv run: 8 pixels x 32 channels (16 zmm accumulators) per tile.
#include "kernels/conv/conv_igemm.h"
#include "kernels/gemm/vec_avx512.h"

namespace systolic::kernels {

void conv_igemm_8x32_avx512_run(const ConvParams& p, const ConvArgs& a, pthreadpool_t pool) {
  igemm::run<VecAvx512, 8, 2>(p, a, pool);
}

}  // namespace systolic::kernels
