// The vector norm kernels' table entries: checks (plain code), run per ISA.
#include "kernels/norm/norm.h"
#include "kernels/norm/norm_util.h"

namespace systolic::kernels {

void norm_avx2_run(const NormParams&, const float*, const float*, const float*, float*, pthreadpool_t);
void norm_avx512_run(const NormParams&, const float*, const float*, const float*, float*, pthreadpool_t);

namespace {

bool accepts_avx2(const NormParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx2_fma()) return norm_reject(why, "needs avx2+fma");
  return norm_well_formed(p, why);
}

bool accepts_avx512(const NormParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx512()) return norm_reject(why, "needs avx512f/bw/vl/dq");
  return norm_well_formed(p, why);
}

}  // namespace

extern const NormKernel norm_f32_avx2 = {"norm_f32_avx2", accepts_avx2, norm_avx2_run};
extern const NormKernel norm_f32_avx512 = {"norm_f32_avx512", accepts_avx512, norm_avx512_run};

}  // namespace systolic::kernels
