// AVX2+FMA depthwise conv run (8-channel vectors).
#include "kernels/conv/conv_dw.h"
#include "kernels/gemm/vec_avx2.h"

namespace systolic::kernels {

void conv_dw_avx2_run(const ConvParams& p, const ConvArgs& a, pthreadpool_t pool) {
  dw::run<VecAvx2>(p, a, pool);
}

}  // namespace systolic::kernels
