// AVX512-VNNI int8 implicit-GEMM conv runs: 6 pixels x 64 channels (24 zmm int32 accumulators)
// and 8 x 32 (16) per tile, vpdpbusd on 4-byte groups of K.
// GCC 12 flags the AVX-512 intrinsics' internal _mm512_undefined_* operands once the epilogue
// is inlined into the tile loop: a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/qconv/qconv_igemm.h"
#include "kernels/qconv/qvec_avx512vnni.h"

namespace systolic::kernels {

void qconv_igemm_6x64_avx512vnni_run(const QConvParams& p, const QConvArgs& a, pthreadpool_t pool) {
  qigemm::run<QVecAvx512Vnni, 6, 4>(p, a, pool);
}

void qconv_igemm_8x32_avx512vnni_run(const QConvParams& p, const QConvArgs& a, pthreadpool_t pool) {
  qigemm::run<QVecAvx512Vnni, 8, 2>(p, a, pool);
}

}  // namespace systolic::kernels
