// The int8 depthwise conv kernels' table entries: checks and packing (plain code), run per ISA.
#include "kernels/conv/conv_util.h"
#include "kernels/qconv/qconv_dw.h"

namespace systolic::kernels {

void qconv_dw_avx2_run(const QConvParams&, const QConvArgs&, pthreadpool_t);
void qconv_dw_avx512_run(const QConvParams&, const QConvArgs&, pthreadpool_t);

namespace {

bool depthwise(const QConvParams& qp, std::string* why) {
  const ConvParams& p = qp.conv;
  if (!conv_well_formed(p, why)) return false;
  if (p.src_u8) return conv_reject(why, "src_u8 is the fp32 family's image input");
  if (p.groups != p.ic || p.oc != p.ic) return conv_reject(why, "not depthwise (groups == ic == oc)");
  if (long(p.kh) * p.kw > qdw::kMaxTaps) return conv_reject(why, "kernel window too long for exact int32 sums");
  return true;
}

bool accepts_avx2(const QConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx2_fma()) return conv_reject(why, "needs avx2");
  return depthwise(p, why);
}

bool accepts_avx512(const QConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx512()) return conv_reject(why, "needs avx512f/bw/vl/dq");
  return depthwise(p, why);
}

std::size_t no_workspace(const QConvParams&) { return 0; }

}  // namespace

extern const QConvKernel qconv_u8s8_dw_avx512 = {"qconv_u8s8_dw_avx512", accepts_avx512, qdw::packed_bytes<32>,
                                                 qdw::pack<32>, no_workspace, qconv_dw_avx512_run};

extern const QConvKernel qconv_u8s8_dw_avx2 = {"qconv_u8s8_dw_avx2", accepts_avx2, qdw::packed_bytes<16>,
                                               qdw::pack<16>, no_workspace, qconv_dw_avx2_run};

}  // namespace systolic::kernels
