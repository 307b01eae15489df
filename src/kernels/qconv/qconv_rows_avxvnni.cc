// AVX-VNNI padded-kernel-row int8 conv run (qconv_rows.h): 6 pixels x 16 channels.
#include "kernels/qconv/qconv_rows.h"
#include "kernels/qconv/qvec_avxvnni.h"

namespace systolic::kernels {

void qconv_rows_6x16_avxvnni_run(const QConvParams& p, const QConvArgs& a, pthreadpool_t pool) {
  qrows::run<QVecAvxVnni, 6, 2>(p, a, pool);
}

}  // namespace systolic::kernels
