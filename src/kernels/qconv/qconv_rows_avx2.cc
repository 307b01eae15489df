// AVX2 padded-kernel-row int8 conv run (qconv_rows.h): 6 pixels x 16 channels, source bytes
// widened to int16 pairs as they are broadcast, vpmaddwd against int16 weights.
#include "kernels/qconv/qconv_rows.h"
#include "kernels/qconv/qvec_avx2.h"

namespace systolic::kernels {

void qconv_rows_6x16_avx2_run(const QConvParams& p, const QConvArgs& a, pthreadpool_t pool) {
  qrows::run<QVecAvx2Bytes, 6, 2>(p, a, pool);
}

}  // namespace systolic::kernels
