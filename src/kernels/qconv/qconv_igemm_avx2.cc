// AVX2 int8 implicit-GEMM conv run: 6 pixels x 16 channels (12 ymm int32 accumulators) per
// tile, int16 pairs through vpmaddwd.
#include "kernels/qconv/qconv_igemm.h"
#include "kernels/qconv/qvec_avx2.h"

namespace systolic::kernels {

void qconv_igemm_6x16_avx2_run(const QConvParams& p, const QConvArgs& a, pthreadpool_t pool) {
  qigemm::run<QVecAvx2, 6, 2>(p, a, pool);
}

}  // namespace systolic::kernels
