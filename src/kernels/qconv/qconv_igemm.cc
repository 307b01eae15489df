// The int8 implicit-GEMM conv kernels' table entries: checks and packing (plain code), run per ISA.
#include "kernels/conv/conv_util.h"
#include "kernels/qconv/qconv_igemm.h"

namespace systolic::kernels {

void qconv_igemm_6x16_avx2_run(const QConvParams&, const QConvArgs&, pthreadpool_t);
void qconv_igemm_6x16_avxvnni_run(const QConvParams&, const QConvArgs&, pthreadpool_t);
void qconv_igemm_6x64_avx512vnni_run(const QConvParams&, const QConvArgs&, pthreadpool_t);
void qconv_igemm_8x32_avx512vnni_run(const QConvParams&, const QConvArgs&, pthreadpool_t);

namespace {

bool common(const QConvParams& p, std::string* why) {
  if (!conv_well_formed(p.conv, why)) return false;
  if (p.conv.src_u8) return conv_reject(why, "src_u8 is the fp32 family's image input");
  const long K = long(p.conv.kh) * p.conv.kw * (p.conv.ic / p.conv.groups);
  if (K > qigemm::kMaxK) return conv_reject(why, "kernel window too long for exact int32 sums");
  return true;
}

bool accepts_avx2(const QConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx2_fma()) return conv_reject(why, "needs avx2");
  return common(p, why);
}

bool accepts_avxvnni(const QConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.avx_vnni) return conv_reject(why, "needs avx-vnni");
  return common(p, why);
}

bool accepts_avx512vnni(const QConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx512_vnni()) return conv_reject(why, "needs avx512-vnni");
  return common(p, why);
}

// 64-wide panels only where they pad the channels no more than 32-wide ones would.
bool accepts_avx512vnni_64(const QConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!accepts_avx512vnni(p, cpu, why)) return false;
  const long ocg = p.conv.oc / p.conv.groups;
  if (qigemm::ceil_div(ocg, 64) * 64 > qigemm::ceil_div(ocg, 32) * 32)
    return conv_reject(why, "output channels per group fill 32-wide panels better");
  return true;
}

std::size_t no_workspace(const QConvParams&) { return 0; }

}  // namespace

extern const QConvKernel qconv_u8s8_igemm_6x64_avx512vnni = {
    "qconv_u8s8_igemm_6x64_avx512vnni", accepts_avx512vnni_64, qigemm::packed_bytes<int8_t, 64, 4>,
    qigemm::pack<int8_t, 64, 4>, no_workspace, qconv_igemm_6x64_avx512vnni_run};

extern const QConvKernel qconv_u8s8_igemm_8x32_avx512vnni = {
    "qconv_u8s8_igemm_8x32_avx512vnni", accepts_avx512vnni, qigemm::packed_bytes<int8_t, 32, 4>,
    qigemm::pack<int8_t, 32, 4>, no_workspace, qconv_igemm_8x32_avx512vnni_run};

extern const QConvKernel qconv_u8s8_igemm_6x16_avxvnni = {
    "qconv_u8s8_igemm_6x16_avxvnni", accepts_avxvnni, qigemm::packed_bytes<int8_t, 16, 4>,
    qigemm::pack<int8_t, 16, 4>, no_workspace, qconv_igemm_6x16_avxvnni_run};

extern const QConvKernel qconv_u8s8_igemm_6x16_avx2 = {
    "qconv_u8s8_igemm_6x16_avx2", accepts_avx2, qigemm::packed_bytes<int16_t, 16, 2>,
    qigemm::pack<int16_t, 16, 2>, no_workspace, qconv_igemm_6x16_avx2_run};

}  // namespace systolic::kernels
