// The Winograd host model: the kernel's task grid, its GEMMs on the calibrated rate, transforms
// and weight waits, and nothing off the measured host.
#include "sim/host_winograd.h"

#include <gtest/gtest.h>

#include "kernels/conv/winograd_blocking.h"

namespace systolic::sim {
namespace {

kernels::ConvParams conv3x3(int n, int c, int hw) {
  kernels::ConvParams p;
  p.n = n, p.ic = p.oc = c, p.ih = p.iw = p.oh = p.ow = hw, p.kh = p.kw = 3, p.pad_t = p.pad_l = 1;
  return p;
}

target::Target host(double wino) {
  target::Target t;
  t.cores = 2;
  t.clock_ghz = 2;
  t.host_conv.enabled = true;
  t.host_conv.mr = 6, t.host_conv.nr = 64;
  t.host_conv.call_cycles = 0;
  t.host_conv.wino_float_cycles = wino;
  t.host_conv.l2_input_bytes = 512 * 1024;
  t.host_conv.l2_gbs = t.host_conv.l3_gbs = t.host_conv.dram_gbs = 1e6;  // weights cost nothing
  t.host_conv.l2_bytes_per_core = 2 << 20;
  return t;
}

TEST(HostWinograd, NamesAndDisabledHost) {
  EXPECT_EQ(winograd_tile_of("conv_f32_winograd_f4x3_avx512"), 4);
  EXPECT_EQ(winograd_tile_of("conv_f32_winograd_f2x3_avx2"), 2);
  EXPECT_EQ(winograd_tile_of("conv_f32_igemm_6x64_avx512"), 0);
  target::Target off = host(1);
  off.host_conv.enabled = false;
  EXPECT_EQ(host_winograd_time(conv3x3(1, 64, 56), 4, off, 1, false).cycles, 0);
}

// Free transforms and weights, whole tiles: the busy cycles are the GEMMs' K steps exactly,
// elems x tiles/MR x panels x ic steps; F(4x4) does 4/9 of direct's at 56x56 (whole tiles).
TEST(HostWinograd, GemmStepsMatchTheTileCount) {
  const kernels::ConvParams p = conv3x3(1, 64, 48);  // 12x12 tiles of 4: 144 = 24 GEMM tiles of 6
  const HostConvTime t = host_winograd_time(p, 4, host(0), 1.0, false);
  EXPECT_DOUBLE_EQ(t.busy, 36.0 * (144 / 6) * 1 * 64);
  EXPECT_EQ(t.weight_wait, 0);
  const kernels::winograd::Grid g = kernels::winograd::grid(p, 4, 36, 6, 64, 2, {0, 512 * 1024});
  EXPECT_EQ(t.tasks, g.blocks * g.groups);
  EXPECT_GE(t.cycles, t.busy / 2);  // two threads at best halve it
}

// The GEMMs store raw sums into the element's scratch (no bias, residual or activation): each
// MR-row call costs a K split's partial call, not a full one. 36 elements x 24 calls x 1 panel.
TEST(HostWinograd, GemmCallsCostPartialCalls) {
  const kernels::ConvParams p = conv3x3(1, 64, 48);
  target::Target t = host(0);
  const double base = host_winograd_time(p, 4, t, 1.0, false).busy;
  t.host_conv.call_cycles = 1000;  // the direct kernel's full call: not charged here
  t.host_conv.partial_call_cycles = 10;
  EXPECT_DOUBLE_EQ(host_winograd_time(p, 4, t, 1.0, false).busy - base, 36.0 * 24 * 10);
}

// Each transformed float costs wino_float_cycles: input (ic) and output (oc) floats per element
// per tile, input again for every panel group of a block.
TEST(HostWinograd, TransformsCostPerFloat) {
  const kernels::ConvParams p = conv3x3(1, 64, 48);
  const HostConvTime base = host_winograd_time(p, 4, host(0), 1.0, false);
  const HostConvTime with = host_winograd_time(p, 4, host(2), 1.0, false);
  const kernels::winograd::Grid g = kernels::winograd::grid(p, 4, 36, 6, 64, 2, {0, 512 * 1024});
  EXPECT_DOUBLE_EQ(with.busy - base.busy, 2.0 * 36 * 144 * (64.0 * g.groups + 64));
  // F(2x2) tiles cost their own transform cost when it is measured, F(4x4)'s stays: 24x24 tiles
  // of 2, 16 elements each.
  target::Target two = host(2);
  two.host_conv.wino2_float_cycles = 0.5;
  const kernels::winograd::Grid g2 = kernels::winograd::grid(p, 2, 16, 6, 64, 2, {0, 512 * 1024});
  const double base2 = host_winograd_time(p, 2, host(0), 1.0, false).busy;
  EXPECT_DOUBLE_EQ(host_winograd_time(p, 2, two, 1.0, false).busy - base2, 0.5 * 16 * 576 * (64.0 * g2.groups + 64));
  EXPECT_DOUBLE_EQ(host_winograd_time(p, 2, host(2), 1.0, false).busy - base2, 2.0 * 16 * 576 * (64.0 * g2.groups + 64));
  EXPECT_DOUBLE_EQ(host_winograd_time(p, 4, two, 1.0, false).busy, with.busy);
}

// Weights that come slowly make the GEMMs wait, once per panel and element of each task.
TEST(HostWinograd, SlowWeightsWait) {
  target::Target t = host(0);
  t.host_conv.l3_gbs = t.host_conv.l2_gbs = t.host_conv.dram_gbs = 1;  // 1 GB/s
  t.host_conv.reread_gbs = {};
  const HostConvTime w = host_winograd_time(conv3x3(1, 64, 48), 4, t, 1.0, false);
  EXPECT_GT(w.weight_wait, 0);
  EXPECT_GT(w.busy, host_winograd_time(conv3x3(1, 64, 48), 4, host(0), 1.0, false).busy);
}

// With one panel group every task reads all the weights in the same order, so the threads share
// one stream. A task's first element waits panel_bytes / (full bandwidth) less its first tile's
// FMAs; each later one was fetched while the element before it ran, and waits the transfer less
// that element's GEMM. Split into groups (few blocks), the threads read different panels and
// split the bandwidth.
TEST(HostWinograd, ThreadsShareTheWeightStreamOfOneGroup) {
  target::Target t = host(0);
  t.host_conv.l3_gbs = t.host_conv.l2_gbs = t.host_conv.dram_gbs = 1;  // 1 GB/s
  t.host_conv.reread_gbs = {};
  t.host_conv.l2_bytes_per_core = 0;
  const kernels::ConvParams many = conv3x3(16, 64, 48);  // 2304 tiles: many blocks, one group
  const kernels::winograd::Grid g = kernels::winograd::grid(many, 4, 36, 6, 64, 2, {0, 512 * 1024});
  ASSERT_EQ(g.groups, 1);
  ASSERT_GE(g.blocks, 4);
  ASSERT_EQ(g.tb, 108);  // nominally 21 blocks of 108 tiles and one of 36; the kernels split the
  ASSERT_EQ(g.blocks, 22);  // tiles evenly (block_start: 102 or 108 a block), 384 GEMM calls either way
  EXPECT_EQ(kernels::winograd::block_max(g, 6), 108);
  EXPECT_EQ(kernels::winograd::block_start(g, 1, 6), 102);
  EXPECT_EQ(kernels::winograd::block_start(g, 22, 6), 2304);
  const double panel_bytes = 64.0 * 64 * 4, first_tile = 64;  // a full 6-row tile: ic K steps of 1 cycle
  const double transfer = panel_bytes / 1.0 * t.clock_ghz;   // bytes / (GB/s) = ns, x GHz = cycles
  // Each block's later elements wait the transfer less their calls' FMAs: linear in the calls.
  const double per_block = (transfer - first_tile) + 35 * transfer;
  EXPECT_DOUBLE_EQ(host_winograd_time(many, 4, t, 1.0, false).weight_wait, 22 * per_block - 35 * 384 * 64.0);
  const kernels::ConvParams few = conv3x3(1, 128, 8);  // 4 tiles: one block, two groups of one panel
  const kernels::winograd::Grid f = kernels::winograd::grid(few, 4, 36, 6, 64, 2, {0, 512 * 1024});
  ASSERT_EQ(f.groups, 2);
  // Half the bandwidth; one 4-row tile, the first and only call of every element.
  const double few_wait = 128.0 * 64 * 4 / 0.5 * t.clock_ghz - 4.0 / 6 * 128;
  EXPECT_DOUBLE_EQ(host_winograd_time(few, 4, t, 1.0, false).weight_wait, 2 * 36 * few_wait);
}

}  // namespace
}  // namespace systolic::sim
