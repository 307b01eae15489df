// The array mapping and layer cost on hand-computed cases: folds, fill/drain cycles per
// dataflow and convention, padding waste, traffic, and the compute/memory bound flip.
#include <gtest/gtest.h>

#include "sim/gemm_model.h"
#include "sim/simulate.h"

namespace systolic::sim {
namespace {
using target::Dataflow;

TEST(GemmModel, WeightStationary8x8x8On4x4) {
  const GemmShape g{8, 8, 8, 1};
  // ws: Sr=K=8, Sc=N=8, T=M=8 -> 2 x 2 folds. Native: preload R, then max(T, R) per fold with
  // weights double-buffered, then fill/drain R + C - 2 once: 4 + 4*8 + 6 = 42.
  GemmMapping m = map_gemm(g, 4, 4, 1, Dataflow::weight_stationary, Convention::native);
  EXPECT_EQ(m.row_folds, 2);
  EXPECT_EQ(m.col_folds, 2);
  EXPECT_EQ(m.folds, 4);
  EXPECT_EQ(m.cycles, 42);
  EXPECT_DOUBLE_EQ(m.mapping_eff, 1.0);
  EXPECT_NEAR(m.compute_util, 512.0 / (16 * 42), 1e-12);
  // Traffic in elements: weights once (64), A read once per column fold (2*8*8), partial
  // outputs written once per row fold (2*8*8).
  EXPECT_EQ(m.stationary_elems, 64);
  EXPECT_EQ(m.streamed_elems, 128);
  EXPECT_EQ(m.output_elems, 128);
  // SCALE-Sim: every fold pays 2R + C + T - 2 = 8 + 4 + 8 - 2 = 18 -> 72.
  EXPECT_EQ(map_gemm(g, 4, 4, 1, Dataflow::weight_stationary, Convention::scalesim).cycles, 72);
  // os: R + C + T - 2 = 4 + 4 + 8 - 2 = 14 per fold; is: like ws with Sc = M, T = N.
  EXPECT_EQ(map_gemm(g, 4, 4, 1, Dataflow::output_stationary, Convention::scalesim).cycles, 56);
  EXPECT_EQ(map_gemm(g, 4, 4, 1, Dataflow::input_stationary, Convention::scalesim).cycles, 72);
}

TEST(GemmModel, FoldsSpreadOverArraysAndSplitT) {
  const GemmShape g{8, 8, 8, 1};
  // 4 folds on 4 arrays: one fold each, 4 + 8 + 6 = 18.
  EXPECT_EQ(map_gemm(g, 4, 4, 4, Dataflow::weight_stationary, Convention::native).cycles, 18);
  // 8 arrays: T is split in two, 4 + max(4, 4) + 6 = 14.
  GemmMapping m = map_gemm(g, 4, 4, 8, Dataflow::weight_stationary, Convention::native);
  EXPECT_EQ(m.split, 2);
  EXPECT_EQ(m.cycles, 14);
  // Groups are independent GEMMs: a depthwise 3x3 conv over 32 channels is 32 one-column folds.
  GemmMapping dw = map_gemm(GemmShape{100, 9, 1, 32}, 128, 128, 1, Dataflow::weight_stationary, Convention::native);
  EXPECT_EQ(dw.folds, 32);
  EXPECT_NEAR(dw.mapping_eff, 9.0 / 16384, 1e-12);
}

TEST(GemmModel, PaddingWasteOfAThreeChannelFirstConv) {
  // ResNet's 7x7 stem on 3 channels: K = 147 needs 2 row folds of 128, N = 64 fills half the
  // columns: 147*64 / (2*128*128) = 28.7% of the PEs do work.
  GemmMapping m = map_gemm(GemmShape{112 * 112, 147, 64, 1}, 128, 128, 1, Dataflow::weight_stationary,
                           Convention::native);
  EXPECT_EQ(m.folds, 2);
  EXPECT_NEAR(m.mapping_eff, 147.0 * 64 / (2 * 128 * 128), 1e-12);
  EXPECT_LT(m.compute_util, 0.29);
  // The same conv with 64 input channels fills the array.
  GemmMapping full = map_gemm(GemmShape{112 * 112, 9 * 128, 128, 1}, 128, 128, 1, Dataflow::weight_stationary,
                              Convention::native);
  EXPECT_DOUBLE_EQ(full.mapping_eff, 1.0);
  EXPECT_GT(full.compute_util, 0.95);
}

TEST(LayerCost, BoundFlipsFromComputeToMemoryWhenBandwidthShrinks) {
  target::Target t = *target::builtin_preset("tpu-v4");
  const auto rate = *t.rate("bf16");
  SimOptions o;
  const GemmShape g{4096, 1024, 1024, 1};
  MatrixOperands ops;
  ops.input_bytes = 4096.0 * 1024 * 2;
  ops.weight_bytes = 1024.0 * 1024 * 2;
  ops.output_bytes = 4096.0 * 1024 * 2;
  LayerCost fast = cost_matrix("l", g, ops, t, rate, o);
  EXPECT_EQ(fast.bound, "compute");
  EXPECT_EQ(fast.offchip_bytes, ops.input_bytes + ops.weight_bytes + ops.output_bytes);
  EXPECT_EQ(fast.stall_cycles, fast.total_cycles - fast.compute_cycles);
  t.offchip_gbs = 20;
  LayerCost slow = cost_matrix("l", g, ops, t, rate, o);
  EXPECT_EQ(slow.bound, "memory");
  EXPECT_EQ(slow.compute_cycles, fast.compute_cycles);
  EXPECT_GT(slow.total_cycles, 5 * fast.total_cycles);
  // Activations already on chip cost no off-chip traffic.
  ops.input_onchip = ops.output_onchip = true;
  EXPECT_EQ(cost_matrix("l", g, ops, t, rate, o).offchip_bytes, ops.weight_bytes);
}

TEST(LayerCost, WeightsLargerThanOnChipMemoryAreRefetched) {
  target::Target t = *target::builtin_preset("tpu-v4");
  ASSERT_TRUE(target::apply_what_if(&t, "sram=1MiB").ok());
  t.on_chip = {{"sram", 1 << 20, 1e4}};
  const GemmShape g{4096, 2048, 2048, 1};
  MatrixOperands ops;
  ops.input_bytes = 4096.0 * 2048 * 2;
  ops.weight_bytes = 2048.0 * 2048 * 2;  // 8 MiB of weights, 0.5 MiB of staging
  ops.output_bytes = 4096.0 * 2048 * 2;
  LayerCost l = cost_matrix("l", g, ops, t, *t.rate("bf16"), SimOptions{});
  EXPECT_GT(l.offchip_bytes, 2 * (ops.input_bytes + ops.weight_bytes + ops.output_bytes));
}

TEST(LayerCost, PrecisionSetsRateAndBytes) {
  target::Target v5e = *target::builtin_preset("tpu-v5e");
  const GemmShape g{8192, 1024, 1024, 1};
  MatrixOperands ops;
  SimOptions o;
  LayerCost bf = cost_matrix("l", g, ops, v5e, *v5e.rate("bf16"), o);
  LayerCost i8 = cost_matrix("l", g, ops, v5e, *v5e.rate("int8"), o);
  EXPECT_EQ(i8.compute_cycles, (bf.compute_cycles + 1) / 2);  // twice the int8 rate
  EXPECT_DOUBLE_EQ(i8.onchip_bytes * 2, bf.onchip_bytes);
  // v1 has no bf16: it falls back to its int8 rate with a note.
  target::Target v1 = *target::builtin_preset("tpu-v1");
  std::vector<std::string> notes;
  o.precision = "bf16";
  auto r = resolve_precision(v1, o, &notes);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->bytes, 2);
  EXPECT_EQ(notes.size(), 1u);
  o.precision = "fp64";
  EXPECT_FALSE(resolve_precision(v1, o, &notes).ok());
}

}  // namespace
}  // namespace systolic::sim
