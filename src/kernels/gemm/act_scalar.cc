// Out-of-line scalar activation used by the vector kernels for the non-vectorized kinds.
#include "kernels/gemm/igemm_microkernel.h"

namespace systolic::kernels {

void apply_act_n(const Epilogue& e, float* x, int n) {
  for (int i = 0; i < n; ++i) x[i] = apply_act(e, x[i]);
}

}  // namespace systolic::kernels
