// AVX-VNNI int8 implicit-GEMM conv run: 6 pixels x 16 channels (12 ymm int32 accumulators) per
// tile, vpdpbusd on 4-byte groups of K.
#include "kernels/qconv/qconv_igemm.h"
#include "kernels/qconv/qvec_avxvnni.h"

namespace systolic::kernels {

void qconv_igemm_6x16_avxvnni_run(const QConvParams& p, const QConvArgs& a, pthreadpool_t pool) {
  qigemm::run<QVecAvxVnni, 6, 2>(p, a, pool);
}

}  // namespace systolic::kernels
