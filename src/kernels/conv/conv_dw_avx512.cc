// AVX-512 depthwise conv run (16-channel vectors).
#include "kernels/conv/conv_dw.h"
#include "kernels/gemm/vec_avx512.h"

namespace systolic::kernels {

void conv_dw_avx512_run(const ConvParams& p, const ConvArgs& a, pthreadpool_t pool) {
  dw::run<VecAvx512>(p, a, pool);
}

}  // namespace systolic::kernels
