// The vector pooling kernels' table entries: checks (plain code), run per ISA.
#include "kernels/pool/pool.h"
#include "kernels/pool/pool_util.h"

namespace systolic::kernels {

void pool_avx2_run(const PoolParams&, const float*, float*, pthreadpool_t);
void pool_avx512_run(const PoolParams&, const float*, float*, pthreadpool_t);

namespace {

bool accepts_avx2(const PoolParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!(cpu.avx2 && cpu.fma)) return pool_reject(why, "needs avx2+fma");
  return pool_well_formed(p, why);
}

bool accepts_avx512(const PoolParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx512()) return pool_reject(why, "needs avx512f/bw/vl/dq");
  return pool_well_formed(p, why);
}

}  // namespace

extern const PoolKernel pool_f32_avx2 = {"pool_f32_avx2", accepts_avx2, pool_avx2_run};
extern const PoolKernel pool_f32_avx512 = {"pool_f32_avx512", accepts_avx512, pool_avx512_run};

}  // namespace systolic::kernels
