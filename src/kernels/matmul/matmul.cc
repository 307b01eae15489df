// The vector matmul kernels' table entries: checks (plain code), run per ISA.
#include "kernels/matmul/matmul.h"
#include "kernels/matmul/matmul_util.h"

namespace systolic::kernels {

void matmul_avx2_run(const MatMulParams&, const float*, const float*, float*, pthreadpool_t);
void matmul_avx512_run(const MatMulParams&, const float*, const float*, float*, pthreadpool_t);

namespace {

bool accepts_avx2(const MatMulParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx2_fma()) return matmul_reject(why, "needs avx2+fma");
  return matmul_well_formed(p, why);
}

bool accepts_avx512(const MatMulParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx512()) return matmul_reject(why, "needs avx512f/bw/vl/dq");
  return matmul_well_formed(p, why);
}

}  // namespace

extern const MatMulKernel matmul_f32_6x16_avx2 = {"matmul_f32_6x16_avx2", accepts_avx2, matmul_avx2_run};
extern const MatMulKernel matmul_f32_12x32_avx512 = {"matmul_f32_12x32_avx512", accepts_avx512, matmul_avx512_run};

}  // namespace systolic::kernels
