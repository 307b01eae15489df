// The int8 Winograd kernels' table entries: which convs they take and the weight transform
// (plain code); run in qconv_winograd_avx2.cc.
#include "kernels/qconv/qconv_winograd.h"

#include "kernels/conv/conv_util.h"

namespace systolic::kernels {

void qconv_winograd_f2x3_avx2_run(const QConvParams&, const QConvArgs&, pthreadpool_t);
void qconv_winograd_f3x3_avx2_run(const QConvParams&, const QConvArgs&, pthreadpool_t);

namespace qwinograd {
namespace {

// The fp32 kernels' AVX2 blocking with its input budget counted in int16 (half a float): the
// same bytes of transformed input per block.
igemm::Blocking blocking() {
  igemm::Blocking b = igemm::kBlockingAvx2;
  b.l2_input *= 2;
  return b;
}

}  // namespace

template <class F>
bool eligible(const QConvParams& qp, std::string* why) {
  const ConvParams& p = qp.conv;
  if (!conv_well_formed(p, why)) return false;
  if (p.src_u8) return conv_reject(why, "src_u8 is the fp32 family's image input");
  if (p.kh != 3 || p.kw != 3 || p.sh != 1 || p.sw != 1 || p.dh != 1 || p.dw != 1)
    return conv_reject(why, "Winograd needs a 3x3 kernel, stride 1, no dilation");
  if (p.groups != 1) return conv_reject(why, "Winograd needs one group");
  if (qp.out_f32) return conv_reject(why, "Winograd writes uint8 output only");
  if (p.ic % 16 || p.oc % NR) return conv_reject(why, "Winograd needs channels in multiples of 16");
  if (p.ic > kMaxIc) return conv_reject(why, "Winograd's int32 sums are exact up to 1024 input channels");
  const long tiles = long(winograd::ceil_tiles(p.oh, F::kTile)) * winograd::ceil_tiles(p.ow, F::kTile);
  if (2L * p.oh * p.ow < tiles * F::kTile * F::kTile)
    return conv_reject(why, "Winograd tiles would hold too few outputs");
  if (winograd::block_tiles(p, kElems<F>, p.n * tiles, MR, blocking().l2_input) < kMinBlockTiles)
    return conv_reject(why, "Winograd tile blocks too small for the weights they stream");
  return true;
}

template <class F>
std::size_t packed_bytes(const QConvParams& qp) {
  const ConvParams& p = qp.conv;
  return std::size_t(kElems<F>) * (p.oc / NR) * p.ic * NR * sizeof(int16_t);
}

template <class F>
void pack(const QConvParams& qp, const int8_t* w, void* out_v) {
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

template <class F>
winograd::Grid grid(const ConvParams& p, long threads) {
  return winograd::grid(p, F::kTile, kElems<F>, MR, NR, threads, blocking());
}

template bool eligible<F2>(const QConvParams&, std::string*);
template bool eligible<F3>(const QConvParams&, std::string*);
template std::size_t packed_bytes<F2>(const QConvParams&);
template std::size_t packed_bytes<F3>(const QConvParams&);
template void pack<F2>(const QConvParams&, const int8_t*, void*);
template void pack<F3>(const QConvParams&, const int8_t*, void*);
template winograd::Grid grid<F2>(const ConvParams&, long);
template winograd::Grid grid<F3>(const ConvParams&, long);

}  // namespace qwinograd

namespace {

using qwinograd::F2;
using qwinograd::F3;

// On AVX2 alone: where the CPU has a byte dot product (VNNI) the direct kernels do 32 byte
// products per instruction against this kernel's 16 int16 products (x 2.25-3.24 fewer needed).
template <class F>
bool accepts_avx2(const QConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx2_fma()) return conv_reject(why, "needs avx2");
  if (cpu.avx_vnni || cpu.has_avx512_vnni()) return conv_reject(why, "VNNI's byte dot products beat Winograd on int16");
  return qwinograd::eligible<F>(p, why);
}

std::size_t no_workspace(const QConvParams&) { return 0; }

}  // namespace

extern const QConvKernel qconv_u8s8_winograd_f3x3_avx2 = {
    "qconv_u8s8_winograd_f3x3_avx2", accepts_avx2<F3>, qwinograd::packed_bytes<F3>, qwinograd::pack<F3>,
    no_workspace, qconv_winograd_f3x3_avx2_run};

extern const QConvKernel qconv_u8s8_winograd_f2x3_avx2 = {
    "qconv_u8s8_winograd_f2x3_avx2", accepts_avx2<F2>, qwinograd::packed_bytes<F2>, qwinograd::pack<F2>,
    no_workspace, qconv_winograd_f2x3_avx2_run};

}  // namespace systolic::kernels
