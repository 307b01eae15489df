// The int8 Winograd kernels' table entries: which convs they take and the weight transform
// (plain code); run in qconv_winograd_{avx2,avxvnni,avx512vnni}.cc (qconv_winograd_run.h).
#include "kernels/qconv/qconv_winograd.h"

#include "kernels/conv/conv_util.h"

namespace systolic::kernels {

void qconv_winograd_f2x3_avx2_run(const QConvParams&, const QConvArgs&, pthreadpool_t);
void qconv_winograd_f3x3_avx2_run(const QConvParams&, const QConvArgs&, pthreadpool_t);
void qconv_winograd_f3x3_avxvnni_run(const QConvParams&, const QConvArgs&, pthreadpool_t);
void qconv_winograd_f3x3_avx512vnni_run(const QConvParams&, const QConvArgs&, pthreadpool_t);

namespace qwinograd {
namespace {

// The fp32 kernels' blocking with its input budget counted in int16 (half a float): the same
// bytes of transformed input per block.
template <class S>
igemm::Blocking blocking() {
  igemm::Blocking b = S::kBlocking;
  b.l2_input *= 2;
  return b;
}

}  // namespace

template <class F, class S>
bool eligible(const QConvParams& qp, std::string* why, double max_waste, long min_tiles) {
  const ConvParams& p = qp.conv;
  if (!conv_well_formed(p, why)) return false;
  if (p.src_u8) return conv_reject(why, "src_u8 is the fp32 family's image input");
  if (p.kh != 3 || p.kw != 3 || p.sh != 1 || p.sw != 1 || p.dh != 1 || p.dw != 1)
    return conv_reject(why, "Winograd needs a 3x3 kernel, stride 1, no dilation");
  if (p.groups != 1) return conv_reject(why, "Winograd needs one group");
  if (qp.out_f32) return conv_reject(why, "Winograd writes uint8 output only");
  if (p.ic % S::CW || p.oc % S::NR)
    return conv_reject(why, ("Winograd needs input channels in multiples of " + std::to_string(S::CW) +
                             " and output channels in multiples of " + std::to_string(S::NR))
                                .c_str());
  if (p.ic > kMaxIc) return conv_reject(why, "Winograd's int32 sums are exact up to 1024 input channels");
  const long tiles = long(winograd::ceil_tiles(p.oh, F::kTile)) * winograd::ceil_tiles(p.ow, F::kTile);
  if (waste<F>(p) > max_waste) return conv_reject(why, "Winograd tiles would cover too many dropped outputs");
  if (winograd::block_tiles(p, kElems<F>, p.n * tiles, S::MR, blocking<S>().l2_input) < min_tiles)
    return conv_reject(why, "Winograd tile blocks too small for the weights they stream");
  return true;
}

template <class F, class S>
std::size_t packed_bytes(const QConvParams& qp) {
  const ConvParams& p = qp.conv;
  return std::size_t(kElems<F>) * p.oc * p.ic * sizeof(int16_t);
}

template <class F, class S>
void pack(const QConvParams& qp, const int8_t* w, void* out_v) {
  constexpr int NR = S::NR;
  constexpr int kIn = F::kIn;
  constexpr auto& G = F::kG;
  const ConvParams& p = qp.conv;
  const int panels = p.oc / NR;
  int16_t* out = static_cast<int16_t*>(out_v);
  for (int k = 0; k < p.oc; ++k)
    for (int c = 0; c < p.ic; ++c) {
      const int8_t* g = w + (std::size_t(k) * p.ic + c) * 9;
      int t[kIn][3];  // (sG) g
      for (int i = 0; i < kIn; ++i)
        for (int j = 0; j < 3; ++j) t[i][j] = G[i][0] * g[j] + G[i][1] * g[3 + j] + G[i][2] * g[6 + j];
      for (int i = 0; i < kIn; ++i)
        for (int j = 0; j < kIn; ++j) {
          const int u = t[i][0] * G[j][0] + t[i][1] * G[j][1] + t[i][2] * G[j][2];  // fits int16 (F's bound)
          const std::size_t e = i * kIn + j;
          out[(((e * panels + k / NR) * (p.ic / 2) + c / 2) * NR + k % NR) * 2 + c % 2] = int16_t(u);
        }
    }
}

template <class F, class S>
winograd::Grid grid(const ConvParams& p, long threads) {
  return winograd::grid(p, F::kTile, kElems<F>, S::MR, S::NR, threads, blocking<S>());
}

template winograd::Grid grid<F2, Ymm>(const ConvParams&, long);
template winograd::Grid grid<F3, Ymm>(const ConvParams&, long);
template winograd::Grid grid<F3, Zmm>(const ConvParams&, long);

}  // namespace qwinograd

namespace {

using qwinograd::F2;
using qwinograd::F3;

using qwinograd::Ymm;
using qwinograd::Zmm;

// AVX2 alone (vpmaddwd): where the CPU has VNNI, the VNNI forms below run instead.
template <class F>
bool accepts_avx2(const QConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx2_fma()) return conv_reject(why, "needs avx2");
  if (cpu.avx_vnni || cpu.has_avx512_vnni()) return conv_reject(why, "the VNNI forms (vpdpwssd) run here");
  return qwinograd::eligible<F, Ymm>(p, why);
}

// AVX-VNNI's vpdpwssd on ymm, where AVX512-VNNI's zmm form is missing.
bool accepts_avxvnni(const QConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx2_fma() || !cpu.avx_vnni) return conv_reject(why, "needs avx-vnni");
  if (cpu.has_avx512_vnni()) return conv_reject(why, "the zmm form runs here");
  return qwinograd::eligible<F3, Ymm>(p, why, qwinograd::kVnniMaxWaste, qwinograd::vnni_min_block_tiles(cpu));
}

bool accepts_avx512vnni(const QConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx512_vnni()) return conv_reject(why, "needs avx512-vnni");
  return qwinograd::eligible<F3, Zmm>(p, why, qwinograd::kVnniMaxWaste, qwinograd::vnni_min_block_tiles(cpu));
}

std::size_t no_workspace(const QConvParams&) { return 0; }

}  // namespace

extern const QConvKernel qconv_u8s8_winograd_f3x3_avx512vnni = {
    "qconv_u8s8_winograd_f3x3_avx512vnni", accepts_avx512vnni, qwinograd::packed_bytes<F3, Zmm>,
    qwinograd::pack<F3, Zmm>, no_workspace, qconv_winograd_f3x3_avx512vnni_run};

extern const QConvKernel qconv_u8s8_winograd_f3x3_avxvnni = {
    "qconv_u8s8_winograd_f3x3_avxvnni", accepts_avxvnni, qwinograd::packed_bytes<F3, Ymm>,
    qwinograd::pack<F3, Ymm>, no_workspace, qconv_winograd_f3x3_avxvnni_run};

extern const QConvKernel qconv_u8s8_winograd_f3x3_avx2 = {
    "qconv_u8s8_winograd_f3x3_avx2", accepts_avx2<F3>, qwinograd::packed_bytes<F3, Ymm>, qwinograd::pack<F3, Ymm>,
    no_workspace, qconv_winograd_f3x3_avx2_run};

extern const QConvKernel qconv_u8s8_winograd_f2x3_avx2 = {
    "qconv_u8s8_winograd_f2x3_avx2", accepts_avx2<F2>, qwinograd::packed_bytes<F2, Ymm>, qwinograd::pack<F2, Ymm>,
    no_workspace, qconv_winograd_f2x3_avx2_run};

}  // namespace systolic::kernels
