// AVX-VNNI int8 Winograd F(3x3, 3x3) conv run (qconv_winograd_run.h): AVX2's transforms and
// tile (6 tiles x 16 channels) with each pair of int16 products summed into its lane by one
// vpdpwssd.
#include "kernels/qconv/qconv_winograd_run.h"
#include "kernels/qconv/qvec_avxvnni.h"

namespace systolic::kernels {

void qconv_winograd_f3x3_avxvnni_run(const QConvParams& qp, const QConvArgs& a, pthreadpool_t pool) {
  qwinograd::run<qwinograd::F3, qwinograd::YmmTraits<QVecAvxVnniWssd>>(qp, a, pool);
}

}  // namespace systolic::kernels
