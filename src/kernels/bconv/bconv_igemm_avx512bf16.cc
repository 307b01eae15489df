// AVX512-BF16 implicit-GEMM conv runs: 6 pixels x 64 channels (24 zmm fp32 accumulators) and
// 8 x 32 (16) per tile, vdpbf16ps on K pairs.
#include "kernels/bconv/bconv_igemm.h"
#include "kernels/bconv/bvec_avx512bf16.h"

namespace systolic::kernels {

void bconv_igemm_6x64_avx512bf16_run(const ConvParams& p, const ConvArgs& a, pthreadpool_t pool) {
  bigemm::run<BVecAvx512Bf16, 6, 4>(p, a, pool);
}

void bconv_igemm_8x32_avx512bf16_run(const ConvParams& p, const ConvArgs& a, pthreadpool_t pool) {
  bigemm::run<BVecAvx512Bf16, 8, 2>(p, a, pool);
}

}  // namespace systolic::kernels
