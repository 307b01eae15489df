// The implicit-GEMM conv kernels' table entries: checks and packing (plain code), run per ISA.
#include "kernels/conv/conv_igemm.h"
#include "kernels/conv/conv_util.h"

namespace systolic::kernels {

void conv_igemm_6x16_avx2_run(const ConvParams&, const ConvArgs&, pthreadpool_t);
void conv_igemm_8x32_avx512_run(const ConvParams&, const ConvArgs&, pthreadpool_t);

namespace {

bool accepts_avx2(const ConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx2_fma()) return conv_reject(why, "needs avx2+fma");
  return conv_well_formed(p, why);
}

bool accepts_avx512(const ConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx512()) return conv_reject(why, "needs avx512f/bw/vl/dq");
  return conv_well_formed(p, why);
}

}  // namespace

extern const ConvKernel conv_f32_igemm_6x16_avx2 = {
    "conv_f32_igemm_6x16_avx2", accepts_avx2, igemm::packed_floats<16>, igemm::pack<16>,
    igemm::workspace_bytes, conv_igemm_6x16_avx2_run};

extern const ConvKernel conv_f32_igemm_8x32_avx512 = {
    "conv_f32_igemm_8x32_avx512", accepts_avx512, igemm::packed_floats<32>, igemm::pack<32>,
    igemm::workspace_bytes, conv_igemm_8x32_avx512_run};

}  // namespace systolic::kernels
