// AVX2 int8 Winograd F(2x2, 3x3) and F(3x3, 3x3) conv runs (qconv_winograd_run.h): 16 channels
// of input transform at a time, the element GEMMs on the AVX2 tile (6 tiles x 16 channels,
// vpmaddwd + vpaddd).
#include "kernels/qconv/qconv_winograd_run.h"
#include "kernels/qconv/qvec_avx2.h"

namespace systolic::kernels {

void qconv_winograd_f2x3_avx2_run(const QConvParams& qp, const QConvArgs& a, pthreadpool_t pool) {
  qwinograd::run<qwinograd::F2, qwinograd::YmmTraits<QVecAvx2>>(qp, a, pool);
}

void qconv_winograd_f3x3_avx2_run(const QConvParams& qp, const QConvArgs& a, pthreadpool_t pool) {
  qwinograd::run<qwinograd::F3, qwinograd::YmmTraits<QVecAvx2>>(qp, a, pool);
}

}  // namespace systolic::kernels
