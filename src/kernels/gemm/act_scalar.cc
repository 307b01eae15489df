// Out-of-line activation used by the vector kernels for the kinds their epilogues do not
// vectorize: scalar, except GELU, whose erf would cost more per output than the matrix
// product's own row of a transformer MLP: that runs the element-wise family's AVX2 form.
#include "base/cpu.h"
#include "kernels/gemm/igemm_microkernel.h"

namespace systolic::kernels {

void gelu_avx2(float* x, int n, bool tanh_form);  // kernels/eltwise/eltwise_avx2.cc

void apply_act_n(const Epilogue& e, float* x, int n) {
  static const bool avx2 = host_cpu().has_avx2_fma();
  if (e.act == Act::gelu && avx2) {
    gelu_avx2(x, n, e.a != 0.f);
    if (e.round_bf16)
      for (int i = 0; i < n; ++i) x[i] = round_bf16(x[i]);
    return;
  }
  for (int i = 0; i < n; ++i) x[i] = apply_act(e, x[i]);
}

}  // namespace systolic::kernels
