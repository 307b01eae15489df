// The int8 Winograd kernel's table entry: which convs it takes and the weight transform (plain
// code); run in qconv_winograd_avx2.cc.
#include "kernels/qconv/qconv_winograd.h"

#include <algorithm>
#include <cstring>

#include "kernels/conv/conv_util.h"

namespace systolic::kernels {

void qconv_winograd_f2x3_avx2_run(const QConvParams&, const QConvArgs&, pthreadpool_t);

namespace qwinograd {
namespace {

// The fp32 kernels' AVX2 blocking with its input budget counted in int16 (half a float): the
// same bytes of transformed input per block.
igemm::Blocking blocking() {
  igemm::Blocking b = igemm::kBlockingAvx2;
  b.l2_input *= 2;
  return b;
}

// 2G, G of F(2x2, 3x3) doubled: [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1] x 2.
constexpr int kG2[kIn][3] = {{2, 0, 0}, {1, 1, 1}, {1, -1, 1}, {0, 0, 2}};

}  // namespace

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
  const long tiles = long(winograd::ceil_tiles(p.oh, kTile)) * winograd::ceil_tiles(p.ow, kTile);
  if (2L * p.oh * p.ow < tiles * kTile * kTile) return conv_reject(why, "Winograd tiles would hold too few outputs");
  if (winograd::block_tiles(p, kElems, p.n * tiles, MR, blocking().l2_input) < kMinBlockTiles)
    return conv_reject(why, "Winograd tile blocks too small for the weights they stream");
  return true;
}

std::size_t packed_bytes(const QConvParams& qp) {
  const ConvParams& p = qp.conv;
  return std::size_t(kElems) * (p.oc / NR) * p.ic * NR * sizeof(int16_t);
}

void pack(const QConvParams& qp, const int8_t* w, void* out_v) {
  const ConvParams& p = qp.conv;
  const int panels = p.oc / NR;
  int16_t* out = static_cast<int16_t*>(out_v);
  for (int k = 0; k < p.oc; ++k)
    for (int c = 0; c < p.ic; ++c) {
      const int8_t* g = w + (std::size_t(k) * p.ic + c) * 9;
      int t[kIn][3];  // 2G g
      for (int i = 0; i < kIn; ++i)
        for (int j = 0; j < 3; ++j) t[i][j] = kG2[i][0] * g[j] + kG2[i][1] * g[3 + j] + kG2[i][2] * g[6 + j];
      for (int i = 0; i < kIn; ++i)
        for (int j = 0; j < kIn; ++j) {
          const int u = t[i][0] * kG2[j][0] + t[i][1] * kG2[j][1] + t[i][2] * kG2[j][2];  // |u| <= 9 x 128
          const std::size_t e = i * kIn + j;
          out[(((e * panels + k / NR) * (p.ic / 2) + c / 2) * NR + k % NR) * 2 + c % 2] = int16_t(u);
        }
    }
}

winograd::Grid grid(const ConvParams& p, long threads) {
  return winograd::grid(p, kTile, kElems, MR, NR, threads, blocking());
}

}  // namespace qwinograd

namespace {

// On AVX2 alone: where the CPU has a byte dot product (VNNI) the direct kernels do 32 byte
// products per instruction against this kernel's 16 int16 products (x 2.25 fewer needed).
bool accepts_avx2(const QConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx2_fma()) return conv_reject(why, "needs avx2");
  if (cpu.avx_vnni || cpu.has_avx512_vnni()) return conv_reject(why, "VNNI's byte dot products beat Winograd on int16");
  return qwinograd::eligible(p, why);
}

std::size_t no_workspace(const QConvParams&) { return 0; }

}  // namespace

extern const QConvKernel qconv_u8s8_winograd_f2x3_avx2 = {
    "qconv_u8s8_winograd_f2x3_avx2", accepts_avx2, qwinograd::packed_bytes, qwinograd::pack, no_workspace,
    qconv_winograd_f2x3_avx2_run};

}  // namespace systolic::kernels
