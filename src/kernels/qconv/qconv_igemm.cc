// The int8 implicit-GEMM conv kernels' table entries: checks and packing (plain code), run per ISA.
#include "kernels/conv/conv_util.h"
#include "kernels/qconv/qconv_amx.h"
#include "kernels/qconv/qconv_igemm.h"

namespace systolic::kernels {

void qconv_igemm_6x16_avx2_run(const QConvParams&, const QConvArgs&, pthreadpool_t);
void qconv_igemm_6x16_avxvnni_run(const QConvParams&, const QConvArgs&, pthreadpool_t);
void qconv_igemm_6x64_avx512vnni_run(const QConvParams&, const QConvArgs&, pthreadpool_t);
void qconv_igemm_8x32_avx512vnni_run(const QConvParams&, const QConvArgs&, pthreadpool_t);
void qconv_igemm_32x32_amx_run(const QConvParams&, const QConvArgs&, pthreadpool_t);
bool qconv_amx_self_test();  // qconv_igemm_amx.cc

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

// AMX where the OS granted the tile state (base/cpu.cc) and, on this host, the start-up
// self-test gave the reference's bytes; a window of a few bytes per group would be mostly the
// 64-byte tile padding (depthwise has its own kernels).
bool accepts_amx(const QConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.amx_int8 || !cpu.avx512f || !cpu.avx512bw) return conv_reject(why, "needs amx-int8 (granted by the OS)");
  const long icg = p.conv.ic / p.conv.groups;
  if (long(p.conv.kh) * p.conv.kw * icg < 32) return conv_reject(why, "kernel window under 32 bytes: tiles mostly padding");
  if (!common(p, why)) return false;
  if (host_cpu().amx_int8) {
    static const bool ok = qconv_amx_self_test();
    if (!ok) return conv_reject(why, "AMX self-test gave wrong results on this machine");
  }
  return true;
}

}  // namespace

extern const QConvKernel qconv_u8s8_igemm_32x32_amx = {
    "qconv_u8s8_igemm_32x32_amx", accepts_amx, qamx::packed_bytes, qamx::pack, qamx::workspace_bytes,
    qconv_igemm_32x32_amx_run};

extern const QConvKernel qconv_u8s8_igemm_6x64_avx512vnni = {
    "qconv_u8s8_igemm_6x64_avx512vnni", accepts_avx512vnni_64, qigemm::packed_bytes<int8_t, 64, 4>,
    qigemm::pack<int8_t, 64, 4>, qigemm::im2col_bytes<uint8_t, 6, 64, 4>, qconv_igemm_6x64_avx512vnni_run};

extern const QConvKernel qconv_u8s8_igemm_8x32_avx512vnni = {
    "qconv_u8s8_igemm_8x32_avx512vnni", accepts_avx512vnni, qigemm::packed_bytes<int8_t, 32, 4>,
    qigemm::pack<int8_t, 32, 4>, qigemm::im2col_bytes<uint8_t, 8, 32, 4>, qconv_igemm_8x32_avx512vnni_run};

extern const QConvKernel qconv_u8s8_igemm_6x16_avxvnni = {
    "qconv_u8s8_igemm_6x16_avxvnni", accepts_avxvnni, qigemm::packed_bytes<int8_t, 16, 4>,
    qigemm::pack<int8_t, 16, 4>, qigemm::im2col_bytes<uint8_t, 6, 16, 4>, qconv_igemm_6x16_avxvnni_run};

extern const QConvKernel qconv_u8s8_igemm_6x16_avx2 = {
    "qconv_u8s8_igemm_6x16_avx2", accepts_avx2, qigemm::packed_bytes<int16_t, 16, 2>,
    qigemm::pack<int16_t, 16, 2>, qigemm::im2col_bytes<int16_t, 6, 16, 2>, qconv_igemm_6x16_avx2_run};

}  // namespace systolic::kernels
