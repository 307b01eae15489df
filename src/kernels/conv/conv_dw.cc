// The depthwise conv kernels' table entries: checks and packing (plain code), run per ISA.
#include <cstring>

#include "kernels/conv/conv_dw.h"
#include "kernels/conv/conv_util.h"

namespace systolic::kernels {

void conv_dw_avx2_run(const ConvParams&, const ConvArgs&, pthreadpool_t);
void conv_dw_avx512_run(const ConvParams&, const ConvArgs&, pthreadpool_t);

namespace {

bool depthwise(const ConvParams& p, std::string* why) {
  if (!conv_well_formed(p, why)) return false;
  if (p.groups != p.ic || p.oc != p.ic) return conv_reject(why, "not depthwise (groups == ic == oc)");
  if (p.src_u8) return conv_reject(why, "reads float sources only");
  return true;
}

bool accepts_avx2(const ConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx2_fma()) return conv_reject(why, "needs avx2+fma");
  return depthwise(p, why);
}

bool accepts_avx512(const ConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx512()) return conv_reject(why, "needs avx512f/bw/vl/dq");
  return depthwise(p, why);
}

std::size_t packed_floats(const ConvParams& p) {
  return std::size_t(p.kh) * p.kw * dw::padded(p.oc);
}

// OIHW [c][1][ky][kx] -> [ky][kx][c], channel rows zero-padded.
void pack(const ConvParams& p, const float* w, float* out) {
  const int cp = dw::padded(p.oc);
  std::memset(out, 0, packed_floats(p) * sizeof(float));
  for (int c = 0; c < p.oc; ++c)
    for (int t = 0; t < p.kh * p.kw; ++t) out[long(t) * cp + c] = w[long(c) * p.kh * p.kw + t];
}

std::size_t workspace(const ConvParams&) { return 0; }

}  // namespace

extern const ConvKernel conv_f32_dw_avx2 = {"conv_f32_dw_avx2", accepts_avx2, packed_floats, pack,
                                            workspace, conv_dw_avx2_run};
extern const ConvKernel conv_f32_dw_avx512 = {"conv_f32_dw_avx512", accepts_avx512, packed_floats,
                                              pack, workspace, conv_dw_avx512_run};

}  // namespace systolic::kernels
