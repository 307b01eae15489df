// The Winograd conv kernels' table entries: which convs they take (plain code), run per ISA.
#include "kernels/conv/conv_util.h"
#include "kernels/conv/conv_winograd.h"

namespace systolic::kernels {

void conv_winograd_f4x3_avx2_run(const ConvParams&, const ConvArgs&, pthreadpool_t);
void conv_winograd_f4x3_avx512_run(const ConvParams&, const ConvArgs&, pthreadpool_t);
void conv_winograd_f2x3_avx2_run(const ConvParams&, const ConvArgs&, pthreadpool_t);
void conv_winograd_f2x3_avx512_run(const ConvParams&, const ConvArgs&, pthreadpool_t);

namespace {

// 3x3, stride 1, no dilation, one group, float source; and where it wins.
template <class F>
bool eligible(const ConvParams& p, const igemm::Blocking& bl, int mr, std::string* why) {
  if (!conv_well_formed(p, why)) return false;
  if (p.kh != 3 || p.kw != 3 || p.sh != 1 || p.sw != 1 || p.dh != 1 || p.dw != 1)
    return conv_reject(why, "Winograd needs a 3x3 kernel, stride 1, no dilation");
  if (p.groups != 1) return conv_reject(why, "Winograd needs one group");
  if (p.src_u8) return conv_reject(why, "Winograd reads a float source only");
  // Where it loses to the direct kernels (2 threads, systolic_kernel_bench): few input channels
  // make the GEMMs too short for their transforms (F(4x4), 16 -> 64 at 56x56: 495 vs 313 us),
  // few output channels leave the panels empty; tiny images fill the tiles with few outputs.
  if (p.ic < 32 || p.oc < 32) return conv_reject(why, "Winograd needs at least 32 input and output channels");
  const long tiles = long(winograd::ceil_tiles(p.oh, F::kTile)) * winograd::ceil_tiles(p.ow, F::kTile);
  if (2L * p.oh * p.ow < tiles * F::kTile * F::kTile) return conv_reject(why, "Winograd tiles would hold too few outputs");
  if (winograd::block_tiles(p, winograd::kElems<F>, p.n * tiles, mr, bl.l2_input) < winograd::kMinBlockTiles)
    return conv_reject(why, "Winograd tile blocks too small for the weights they stream");
  return true;
}

template <class F>
bool accepts_avx2(const ConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx2_fma()) return conv_reject(why, "needs avx2+fma");
  return eligible<F>(p, igemm::kBlockingAvx2, 6, why);
}

template <class F>
bool accepts_avx512(const ConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx512()) return conv_reject(why, "needs avx512f/bw/vl/dq");
  return eligible<F>(p, igemm::kBlockingAvx512, 6, why);
}

std::size_t no_workspace(const ConvParams&) { return 0; }

using winograd::F2x3;
using winograd::F4x3;

}  // namespace

extern const ConvKernel conv_f32_winograd_f4x3_avx512 = {
    "conv_f32_winograd_f4x3_avx512", accepts_avx512<F4x3>, winograd::packed_floats<F4x3, 64>,
    winograd::pack<F4x3, 64>, no_workspace, conv_winograd_f4x3_avx512_run};

extern const ConvKernel conv_f32_winograd_f4x3_avx2 = {
    "conv_f32_winograd_f4x3_avx2", accepts_avx2<F4x3>, winograd::packed_floats<F4x3, 16>,
    winograd::pack<F4x3, 16>, no_workspace, conv_winograd_f4x3_avx2_run};

extern const ConvKernel conv_f32_winograd_f2x3_avx512 = {
    "conv_f32_winograd_f2x3_avx512", accepts_avx512<F2x3>, winograd::packed_floats<F2x3, 64>,
    winograd::pack<F2x3, 64>, no_workspace, conv_winograd_f2x3_avx512_run};

extern const ConvKernel conv_f32_winograd_f2x3_avx2 = {
    "conv_f32_winograd_f2x3_avx2", accepts_avx2<F2x3>, winograd::packed_floats<F2x3, 16>,
    winograd::pack<F2x3, 16>, no_workspace, conv_winograd_f2x3_avx2_run};

}  // namespace systolic::kernels
