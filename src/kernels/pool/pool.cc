// The vector pooling kernels' table entries: checks (plain code), run per ISA.
#include "kernels/pool/pool.h"
#include "kernels/pool/pool_util.h"

namespace systolic::kernels {

void pool_avx2_run(const PoolParams&, const float*, float*, pthreadpool_t);
void pool_avx512_run(const PoolParams&, const float*, float*, pthreadpool_t);
void pool_bf16_avx2_run(const PoolParams&, const float*, float*, pthreadpool_t);
void pool_bf16_avx512_run(const PoolParams&, const float*, float*, pthreadpool_t);

namespace {

bool avx2(const CpuFeatures& cpu, std::string* why) { return cpu.avx2 && cpu.fma ? true : pool_reject(why, "needs avx2+fma"); }
bool avx512(const CpuFeatures& cpu, std::string* why) {
  return cpu.has_avx512() ? true : pool_reject(why, "needs avx512f/bw/vl/dq");
}

template <bool Bf16>
bool accepts_avx2(const PoolParams& p, const CpuFeatures& cpu, std::string* why) {
  return avx2(cpu, why) && pool_storage(p, Bf16, why) && pool_well_formed(p, why);
}

template <bool Bf16>
bool accepts_avx512(const PoolParams& p, const CpuFeatures& cpu, std::string* why) {
  return avx512(cpu, why) && pool_storage(p, Bf16, why) && pool_well_formed(p, why);
}

}  // namespace

extern const PoolKernel pool_f32_avx2 = {"pool_f32_avx2", accepts_avx2<false>, pool_avx2_run};
extern const PoolKernel pool_f32_avx512 = {"pool_f32_avx512", accepts_avx512<false>, pool_avx512_run};
extern const PoolKernel pool_bf16_avx2 = {"pool_bf16_avx2", accepts_avx2<true>, pool_bf16_avx2_run};
extern const PoolKernel pool_bf16_avx512 = {"pool_bf16_avx512", accepts_avx512<true>, pool_bf16_avx512_run};

}  // namespace systolic::kernels
