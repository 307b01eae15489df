// AVX512-VNNI padded-kernel-row int8 conv runs (qconv_rows.h): 6 pixels x 64 channels and 8 x 32.
// GCC 12 flags the AVX-512 intrinsics' internal _mm512_undefined_* operands once the epilogue
// is inlined into the tile loop: a false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/qconv/qconv_rows.h"
#include "kernels/qconv/qvec_avx512vnni.h"

namespace systolic::kernels {

void qconv_rows_6x64_avx512vnni_run(const QConvParams& p, const QConvArgs& a, pthreadpool_t pool) {
  qrows::run<QVecAvx512Vnni, 6, 4>(p, a, pool);
}

void qconv_rows_8x32_avx512vnni_run(const QConvParams& p, const QConvArgs& a, pthreadpool_t pool) {
  qrows::run<QVecAvx512Vnni, 8, 2>(p, a, pool);
}

}  // namespace systolic::kernels
