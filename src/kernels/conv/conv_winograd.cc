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

// Few output channels and few tiles (see accepts_avx512).
template <class F>
bool narrow_and_small(const ConvParams& p) {
  const long tiles = long(winograd::ceil_tiles(p.oh, F::kTile)) * winograd::ceil_tiles(p.ow, F::kTile);
  return p.oc < 64 && p.n * tiles < 128;
}

template <class F>
bool accepts_avx2(const ConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx2_fma()) return conv_reject(why, "needs avx2+fma");
  // Where the AVX-512 Winograd steps aside, the AVX-512 direct kernels beat this one too
  // (14x14 128 -> 32: 486 vs 370 GFLOP/s); on an AVX2 machine it beats the AVX2 direct kernel
  // (370 vs 219).
  if (cpu.has_avx512() && narrow_and_small<F>(p))
    return conv_reject(why, "Winograd with under 64 output channels needs at least 128 tiles");
  return eligible<F>(p, igemm::kBlockingAvx2, 6, why);
}

template <class F>
bool accepts_avx512(const ConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx512()) return conv_reject(why, "needs avx512f/bw/vl/dq");
  if (!eligible<F>(p, igemm::kBlockingAvx512, 6, why)) return false;
  // Under 64 output channels part of every 64-wide panel is empty; with few tiles as well the
  // direct kernels win (DenseNet-121's 128 -> 32 convs, 2 threads, systolic_kernel_bench:
  // 14x14 F(2x2) 251 vs 486 GFLOP/s, 28x28 F(4x4) 425 vs 504; at 56x56, or 14x14 in a batch of
  // 16, Winograd still wins: 762 vs 516, 569 vs 532). The AVX2 kernels' panels are 16 wide.
  if (narrow_and_small<F>(p)) return conv_reject(why, "Winograd with under 64 output channels needs at least 128 tiles");
  return true;
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
