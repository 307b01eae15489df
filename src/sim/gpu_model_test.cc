// The GPU tiling model on shapes whose answers follow by hand: padding to the MMA's K, wave
// quantization, split-K for small outputs, shared-memory-bound small tiles, L2 streams.
#include <gtest/gtest.h>

#include "sim/gpu_model.h"
#include "sim/simulate.h"
#include "target/target.h"

namespace systolic::sim {
namespace {

const target::Target& a100() {
  static const target::Target t = *target::builtin_preset("a100-sxm4-80gb");
  return t;
}

TEST(GpuModel, KIsPaddedToTheMmaKThenToWholeKSteps) {
  const target::Target& t = a100();
  GemmShape stem{128 * 108, 147, 128, 1};  // a 3-channel 7x7 stem: K = 147
  const GpuTiling bf = gpu_tiling(stem, t, *t.rate("bf16"), 2, 128, 128, 1);
  EXPECT_EQ(bf.bk, 32);            // 64 bytes per stage / 2
  EXPECT_EQ(bf.padded_k, 160);     // 147 -> 160 (k16), already whole K steps of 32
  EXPECT_NEAR(bf.mapping_eff, 147.0 / 160, 1e-12);
  const GpuTiling i8 = gpu_tiling(stem, t, *t.rate("int8"), 1, 128, 128, 1);
  EXPECT_EQ(i8.bk, 64);
  EXPECT_EQ(i8.padded_k, 192);     // 147 -> 160 (k32) -> 192 (steps of 64)
  // M and N that miss the tile waste its rows and columns too.
  const GpuTiling odd = gpu_tiling({100, 256, 200, 1}, t, *t.rate("bf16"), 2, 128, 128, 1);
  EXPECT_EQ(odd.tiles, 2);
  EXPECT_NEAR(odd.mapping_eff, 100.0 * 200 / (128.0 * 256), 1e-12);
}

TEST(GpuModel, OneTileMoreThanTheSmsCostsAWholeWave) {
  const target::Target& t = a100();
  const target::PrecisionRate& bf = *t.rate("bf16");
  const GpuTiling full = gpu_tiling({128 * 108, 1024, 128, 1}, t, bf, 2, 128, 128, 1);
  const GpuTiling over = gpu_tiling({128 * 109, 1024, 128, 1}, t, bf, 2, 128, 128, 1);
  EXPECT_EQ(full.tiles, 108);
  EXPECT_EQ(over.tiles, 109);
  // 128 x 128 x 1024 MACs at 4 tensor cores x 256 MACs per cycle, once per SM, then twice.
  EXPECT_DOUBLE_EQ(full.mainloop_cycles, 128.0 * 128 * 1024 / 1024);
  EXPECT_DOUBLE_EQ(over.mainloop_cycles, 2 * full.mainloop_cycles);
  EXPECT_NEAR(over.waves, 109.0 / (108 * over.ctas_per_sm), 1e-12);
  // The L2 stream: every CTA reads its 128 rows of A and 128 columns of B over K.
  EXPECT_DOUBLE_EQ(full.l2_bytes, 108.0 * (128 + 128) * 1024 * 2);
}

TEST(GpuModel, ABigGemmRunsNearPeakAndASmallOneSplitsK) {
  const target::Target& t = a100();
  const target::PrecisionRate& bf = *t.rate("bf16");
  const GemmShape big{4096, 4096, 4096, 1};
  const GpuTiling b = gpu_tile_gemm(big, t, bf, 2);
  const double util = double(big.macs()) / (t.arrays() * t.rows * t.cols * b.compute_cycles);
  EXPECT_GT(util, 0.85);  // full tiles, ~5 waves: only the last wave's rounding and the epilogues
  EXPECT_LE(util, 1.0);
  EXPECT_EQ(b.split_k, 1);
  // One 64 x 64 output over a long K: a single CTA would leave 107 SMs idle.
  const GemmShape gemv{64, 65536, 64, 1};
  const GpuTiling s = gpu_tile_gemm(gemv, t, bf, 2);
  const GpuTiling one = gpu_tiling(gemv, t, bf, 2, s.bm, s.bn, 1);
  EXPECT_GT(s.split_k, 1);
  EXPECT_LT(s.compute_cycles, one.compute_cycles / 4);
  EXPECT_GT(s.l2_bytes, one.l2_bytes);  // the partial sums written and read back
}

TEST(GpuModel, SmallTilesWaitOnSharedMemory) {
  // A 64 x 32 tile is one warp: per K step it reads 64 + 32 int8 values from shared memory for
  // 64 * 32 MACs. At 128 B/cycle that is 0.75 K cycles; the A100's SM does 2048 int8 MACs per
  // cycle (K cycles for the tile): compute-bound. The H100's does 4096 (0.5 K): shared memory.
  const target::Target& t = a100();
  const GpuTiling a = gpu_tiling({64 * 108, 4096, 32, 1}, t, *t.rate("int8"), 1, 64, 32, 1);
  EXPECT_DOUBLE_EQ(a.mainloop_cycles, 64.0 * 32 * 4096 / 2048);
  const target::Target h100 = *target::builtin_preset("h100-sxm");
  const GpuTiling h = gpu_tiling({64 * 132, 4096, 32, 1}, h100, *h100.rate("int8"), 1, 64, 32, 1);
  EXPECT_DOUBLE_EQ(h.mainloop_cycles, (64.0 + 32) * 4096 / 128);
  EXPECT_GT(h.mainloop_cycles, 64.0 * 32 * 4096 / 4096);
}

TEST(GpuModel, ConvLayersOnAGpuAreTiledNotFolded) {
  const target::Target& t = a100();
  MatrixOperands ops;
  const GemmShape g{8 * 56 * 56, 576, 64, 1};  // ResNet's layer1 3x3 at batch 8
  ops.input_bytes = 8 * 56 * 56 * 64 * 2.0;
  ops.weight_bytes = 576 * 64 * 2.0;
  ops.output_bytes = 8 * 56 * 56 * 64 * 2.0;
  const LayerCost l = cost_matrix("c", g, ops, t, *t.rate("bf16"), SimOptions{});
  EXPECT_TRUE(l.matrix);
  EXPECT_FALSE(l.detail.empty());  // the CTA tiling, e.g. "128x64 x1.2 waves"
  const GpuTiling tl = gpu_tile_gemm(g, t, *t.rate("bf16"), 2);
  EXPECT_EQ(l.map.folds, tl.tiles);
  EXPECT_EQ(l.compute_cycles, int64_t(std::ceil(tl.compute_cycles)));
  EXPECT_DOUBLE_EQ(l.onchip_bytes, tl.l2_bytes);
  EXPECT_DOUBLE_EQ(l.offchip_bytes, ops.input_bytes + ops.weight_bytes + ops.output_bytes);
  EXPECT_GT(l.util, 0);
  EXPECT_LT(l.util, 1);
}

}  // namespace
}  // namespace systolic::sim
