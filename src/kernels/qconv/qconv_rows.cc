// The padded-kernel-row int8 conv kernels' table entries: checks and packing (plain code), run
// per ISA (qconv_rows.h).
#include "kernels/conv/conv_util.h"
#include "kernels/qconv/qconv_rows.h"

namespace systolic::kernels {

void qconv_rows_6x64_avx512vnni_run(const QConvParams&, const QConvArgs&, pthreadpool_t);
void qconv_rows_8x32_avx512vnni_run(const QConvParams&, const QConvArgs&, pthreadpool_t);
void qconv_rows_6x16_avxvnni_run(const QConvParams&, const QConvArgs&, pthreadpool_t);
void qconv_rows_6x16_avx2_run(const QConvParams&, const QConvArgs&, pthreadpool_t);

namespace {

// KG: the dot product's group (4 bytes for vpdpbusd, an int16 pair for vpmaddwd).
bool common(const QConvParams& p, int KG, std::string* why) {
  if (!conv_well_formed(p.conv, why)) return false;
  if (p.conv.src_u8) return conv_reject(why, "src_u8 is the fp32 family's image input");
  if (long(p.conv.kh) * qrows::row_padded(p.conv, KG) > qigemm::kMaxK)
    return conv_reject(why, "kernel window too long for exact int32 sums");
  return qrows::fits(p.conv, KG, why);
}

bool accepts_avx512vnni(const QConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx512_vnni()) return conv_reject(why, "needs avx512-vnni");
  return common(p, 4, why);
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
  return common(p, 4, why);
}

// Widening each broadcast costs a shuffle per panel, where the implicit GEMM widens a window
// once for all panels: past two 16-wide panels it wins (systolic_kernel_bench, interleaved:
// ResNet's 7x7 stem, 64 channels, 97-100 vs 108-139 GOP/s on one thread; MobileNetV2's 3x3
// stem, 32 channels, 55-67 vs 34-48).
bool accepts_avx2(const QConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx2_fma()) return conv_reject(why, "needs avx2");
  if (p.conv.oc > 32) return conv_reject(why, "over two 16-wide panels: the implicit GEMM widens each window once");
  return common(p, 2, why);
}

std::size_t no_workspace(const QConvParams&) { return 0; }

}  // namespace

extern const QConvKernel qconv_u8s8_rows_6x64_avx512vnni = {
    "qconv_u8s8_rows_6x64_avx512vnni", accepts_avx512vnni_64, qrows::packed_bytes<int8_t, 64, 4>, qrows::pack<int8_t, 64, 4>,
    no_workspace, qconv_rows_6x64_avx512vnni_run};

extern const QConvKernel qconv_u8s8_rows_8x32_avx512vnni = {
    "qconv_u8s8_rows_8x32_avx512vnni", accepts_avx512vnni, qrows::packed_bytes<int8_t, 32, 4>, qrows::pack<int8_t, 32, 4>,
    no_workspace, qconv_rows_8x32_avx512vnni_run};

extern const QConvKernel qconv_u8s8_rows_6x16_avxvnni = {
    "qconv_u8s8_rows_6x16_avxvnni", accepts_avxvnni, qrows::packed_bytes<int8_t, 16, 4>, qrows::pack<int8_t, 16, 4>,
    no_workspace, qconv_rows_6x16_avxvnni_run};

extern const QConvKernel qconv_u8s8_rows_6x16_avx2 = {
    "qconv_u8s8_rows_6x16_avx2", accepts_avx2, qrows::packed_bytes<int16_t, 16, 2>, qrows::pack<int16_t, 16, 2>,
    no_workspace, qconv_rows_6x16_avx2_run};

}  // namespace systolic::kernels
