// The implicit-GEMM conv kernels' table entries: checks and packing (plain code), run per ISA.
#include "kernels/conv/conv_igemm.h"
#include "kernels/conv/conv_util.h"

namespace systolic::kernels {

void conv_igemm_6x16_avx2_run(const ConvParams&, const ConvArgs&, pthreadpool_t);
void conv_igemm_6x64_avx512_run(const ConvParams&, const ConvArgs&, pthreadpool_t);
void conv_igemm_8x32_avx512_run(const ConvParams&, const ConvArgs&, pthreadpool_t);
void conv_igemm_14x16_avx512_run(const ConvParams&, const ConvArgs&, pthreadpool_t);

namespace {

// A uint8 image source is read only through the packed-tile path, which converts each
// tile's gathered rows once (see igemm::packs_tiles).
bool u8_ok(const ConvParams& p, std::string* why) {
  if (p.src_u8 && !igemm::packs_tiles(p))
    return conv_reject(why, "a uint8 source needs one group, no x dilation and kw*ic <= 64, kh*kw*ic <= 512");
  return true;
}

bool accepts_avx2(const ConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx2_fma()) return conv_reject(why, "needs avx2+fma");
  return conv_well_formed(p, why) && u8_ok(p, why);
}

bool accepts_avx512(const ConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx512()) return conv_reject(why, "needs avx512f/bw/vl/dq");
  return conv_well_formed(p, why) && u8_ok(p, why);
}

// 64-wide panels only where they pad the channels no more than 32-wide ones would (ResNet's
// multiples of 64 yes; MobileNet's 24, 96 or 144 go to 8x32).
bool accepts_avx512_64(const ConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!accepts_avx512(p, cpu, why)) return false;
  const int ocg = p.oc / p.groups;
  if (igemm::ceil_div(ocg, 64) * 64 > igemm::ceil_div(ocg, 32) * 32)
    return conv_reject(why, "output channels per group fill 32-wide panels better");
  return true;
}

// 16-wide panels for 16 or fewer output channels per group, where a 32-wide panel is at least
// half padding; wider layers keep the 8x32 tile's better ratio of loads to FMAs.
bool accepts_avx512_16(const ConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!accepts_avx512(p, cpu, why)) return false;
  if (p.oc / p.groups > 16) return conv_reject(why, "more than 16 output channels per group fill 32-wide panels");
  return true;
}

}  // namespace

extern const ConvKernel conv_f32_igemm_6x16_avx2 = {
    "conv_f32_igemm_6x16_avx2", accepts_avx2, igemm::packed_floats<16>, igemm::pack<16>,
    igemm::workspace_bytes, conv_igemm_6x16_avx2_run};

extern const ConvKernel conv_f32_igemm_6x64_avx512 = {
    "conv_f32_igemm_6x64_avx512", accepts_avx512_64, igemm::packed_floats<64>, igemm::pack<64>,
    igemm::workspace_bytes, conv_igemm_6x64_avx512_run};

extern const ConvKernel conv_f32_igemm_14x16_avx512 = {
    "conv_f32_igemm_14x16_avx512", accepts_avx512_16, igemm::packed_floats<16>, igemm::pack<16>,
    igemm::workspace_bytes, conv_igemm_14x16_avx512_run};

extern const ConvKernel conv_f32_igemm_8x32_avx512 = {
    "conv_f32_igemm_8x32_avx512", accepts_avx512, igemm::packed_floats<32>, igemm::pack<32>,
    igemm::workspace_bytes, conv_igemm_8x32_avx512_run};

}  // namespace systolic::kernels
