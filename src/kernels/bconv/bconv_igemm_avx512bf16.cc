// AVX512-BF16 implicit-GEMM conv runs: 6 pixels x 64 channels (24 zmm fp32 accumulators) and
// 8 x 32 (16) per tile, vdpbf16ps on K pairs.
// GCC 12 flags the AVX-512 intrinsics' internal _mm512_undefined_* operands once the gather's
// conversions are inlined into the tile loop: a false positive (as in the AMX drivers).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

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
