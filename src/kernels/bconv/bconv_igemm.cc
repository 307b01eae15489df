// The bf16 implicit-GEMM conv kernels' table entries: checks and K2 packing (plain code), run per ISA.
#include <cstdio>

#include "kernels/bconv/bconv_amx.h"
#include "kernels/bconv/bconv_igemm.h"
#include "kernels/conv/conv_util.h"

namespace systolic::kernels {

void bconv_igemm_6x64_avx512bf16_run(const ConvParams&, const ConvArgs&, pthreadpool_t);
void bconv_igemm_8x32_avx512bf16_run(const ConvParams&, const ConvArgs&, pthreadpool_t);
void bconv_igemm_32x32_amx_run(const ConvParams&, const ConvArgs&, pthreadpool_t);
bool bconv_amx_self_test();  // bconv_igemm_amx.cc

namespace {

bool accepts_avx512bf16(const ConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx512() || !cpu.avx512bf16) return conv_reject(why, "needs avx512-bf16");
  if (!conv_well_formed(p, why)) return false;
  if (p.src_u8) return conv_reject(why, "a uint8 image source is the fp32 family's");
  // A depthwise conv fills one lane of a 32-wide panel per group: MobileNetV2 ran 23x slower
  // in bf16 than in fp32, whose depthwise kernels then take the plan's bf16 values.
  if (p.groups > 1 && p.oc / p.groups < 8)
    return conv_reject(why, "under 8 output channels per group (depthwise): the fp32 depthwise kernels are faster");
  // Where measured (at detection): vdpbf16ps must beat fp32 FMA, as on AMD Zen 4/5 (twice the
  // rate), not on Intel parts that run it at half (Cooper Lake to Emerald Rapids without AMX).
  const CpuFeatures::Bf16Rate& r = cpu.bf16_rate;
  if (r.fma_wins()) {
    if (why) {
      char msg[128];
      std::snprintf(msg, sizeof msg, "vdpbf16ps measured slower than FMA here: %.0f vs %.0f GFLOP/s", r.dpbf16ps,
                    r.fma);
      *why = msg;
    }
    return false;
  }
  return true;
}

// AMX-BF16 where the OS granted the tile state (base/cpu.cc) and, on this host, the start-up
// self-test agreed with the reference; a window of a few values per group would be mostly the
// 32-element tile padding.
bool accepts_amx(const ConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.amx_bf16 || !cpu.has_avx512() || !cpu.avx512bf16) return conv_reject(why, "needs amx-bf16 (granted by the OS)");
  if (!conv_well_formed(p, why, true)) return false;
  if (p.src_u8) return conv_reject(why, "a uint8 image source is the fp32 family's");
  if (long(p.kh) * p.kw * (p.ic / p.groups) < 16) return conv_reject(why, "kernel window under 16 values: tiles mostly padding");
  if (host_cpu().amx_bf16) {
    static const bool ok = bconv_amx_self_test();
    if (!ok) return conv_reject(why, "AMX self-test gave wrong results on this machine");
  }
  return true;
}

// 64-wide panels only where they pad the channels no more than 32-wide ones would.
bool accepts_avx512bf16_64(const ConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!accepts_avx512bf16(p, cpu, why)) return false;
  const int ocg = p.oc / p.groups;
  if (bigemm::ceil_div(ocg, 64) * 64 > bigemm::ceil_div(ocg, 32) * 32)
    return conv_reject(why, "output channels per group fill 32-wide panels better");
  return true;
}

}  // namespace

extern const ConvKernel conv_bf16_igemm_32x32_amx = {
    "conv_bf16_igemm_32x32_amx", accepts_amx, bamx::packed_floats, bamx::pack, bamx::workspace_bytes,
    bconv_igemm_32x32_amx_run};

extern const ConvKernel conv_bf16_igemm_6x64_avx512bf16 = {
    "conv_bf16_igemm_6x64_avx512bf16", accepts_avx512bf16_64, bigemm::packed_floats<64>, bigemm::pack<64>,
    bigemm::workspace_bytes, bconv_igemm_6x64_avx512bf16_run};

extern const ConvKernel conv_bf16_igemm_8x32_avx512bf16 = {
    "conv_bf16_igemm_8x32_avx512bf16", accepts_avx512bf16, bigemm::packed_floats<32>, bigemm::pack<32>,
    bigemm::workspace_bytes, bconv_igemm_8x32_avx512bf16_run};

}  // namespace systolic::kernels
