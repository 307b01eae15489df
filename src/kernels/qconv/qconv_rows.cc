// The padded-kernel-row int8 conv kernels' table entries: checks and packing (plain code), run
// per ISA (qconv_rows.h).
#include "kernels/conv/conv_util.h"
#include "kernels/qconv/qconv_rows.h"

namespace systolic::kernels {

void qconv_rows_6x64_avx512vnni_run(const QConvParams&, const QConvArgs&, pthreadpool_t);
void qconv_rows_8x32_avx512vnni_run(const QConvParams&, const QConvArgs&, pthreadpool_t);
void qconv_rows_6x16_avxvnni_run(const QConvParams&, const QConvArgs&, pthreadpool_t);

namespace {

bool common(const QConvParams& p, std::string* why) {
  if (!conv_well_formed(p.conv, why)) return false;
  if (p.conv.src_u8) return conv_reject(why, "src_u8 is the fp32 family's image input");
  if (long(p.conv.kh) * qrows::row_padded(p.conv, 4) > qigemm::kMaxK)
    return conv_reject(why, "kernel window too long for exact int32 sums");
  return qrows::fits(p.conv, 4, why);
}

bool accepts_avx512vnni(const QConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx512_vnni()) return conv_reject(why, "needs avx512-vnni");
  return common(p, why);
}

// 64-wide panels only where they pad the channels no more than 32-wide ones would.
bool accepts_avx512vnni_64(const QConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!accepts_avx512vnni(p, cpu, why)) return false;
  const long oc = p.conv.oc;
  if (qigemm::ceil_div(oc, 64) * 64 > qigemm::ceil_div(oc, 32) * 32)
    return conv_reject(why, "output channels fill 32-wide panels better");
  return true;
}

bool accepts_avxvnni(const QConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.avx_vnni) return conv_reject(why, "needs avx-vnni");
  return common(p, why);
}

std::size_t no_workspace(const QConvParams&) { return 0; }

}  // namespace

extern const QConvKernel qconv_u8s8_rows_6x64_avx512vnni = {
    "qconv_u8s8_rows_6x64_avx512vnni", accepts_avx512vnni_64, qrows::packed_bytes<64, 4>, qrows::pack<64, 4>,
    no_workspace, qconv_rows_6x64_avx512vnni_run};

extern const QConvKernel qconv_u8s8_rows_8x32_avx512vnni = {
    "qconv_u8s8_rows_8x32_avx512vnni", accepts_avx512vnni, qrows::packed_bytes<32, 4>, qrows::pack<32, 4>,
    no_workspace, qconv_rows_8x32_avx512vnni_run};

extern const QConvKernel qconv_u8s8_rows_6x16_avxvnni = {
    "qconv_u8s8_rows_6x16_avxvnni", accepts_avxvnni, qrows::packed_bytes<16, 4>, qrows::pack<16, 4>, no_workspace,
    qconv_rows_6x16_avxvnni_run};

}  // namespace systolic::kernels
