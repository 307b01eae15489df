// The host conv kernel's structure model (sim/host_conv.h) on hand-computed ResNet-50 layers.
#include <gtest/gtest.h>

#include "sim/host_conv.h"

#include <vector>

namespace systolic::sim {
namespace {

kernels::ConvParams conv(int hw, int ic, int oc, int k, int s, int pad) {
  kernels::ConvParams p;
  p.ih = p.iw = hw;
  p.ic = ic;
  p.oc = oc;
  p.kh = p.kw = k;
  p.sh = p.sw = s;
  p.pad_t = p.pad_l = pad;
  p.oh = p.ow = (hw + 2 * pad - k) / s + 1;
  return p;
}

// conv1: 3 -> 64, 7x7 stride 2 pad 3, 224 -> 112. Rows of 7*3 = 21 floats merge, K = 147 packs.
// M = 12544; packed: mc = ceil(ceil(12544 / 8) / 6) * 6 = 1572 (8 tasks for 2 threads), 8 blocks,
// the last 12544 - 7 * 1572 = 1540 rows: tiles = 7 * 262 + 257 = 2091, gathers = 2091 * 7.
TEST(HostConvSim, StemIsPackedWithOneGatherPerTileAndKernelRow) {
  const HostConvBlocking b = host_conv_blocking(conv(224, 3, 64, 7, 2, 3), 6, 16, 2);
  EXPECT_TRUE(b.merge);
  EXPECT_TRUE(b.pack);
  EXPECT_FALSE(b.direct);
  EXPECT_EQ(b.ntaps, 7);
  EXPECT_EQ(b.k, 147);
  EXPECT_EQ(b.panels, 4);
  EXPECT_EQ(b.mc, 1572);
  EXPECT_EQ(b.mblocks, 8);
  EXPECT_EQ(b.tiles, 2091);
  const HostConvEvents e = host_conv_events(b);
  EXPECT_DOUBLE_EQ(e.gathers, 2091.0 * 7);
  EXPECT_DOUBLE_EQ(e.setups, 0);
  EXPECT_EQ(b.pb, 4);  // every packed task runs all panels
}

// The same stem on AVX-512's 64-wide panels: one panel, so no gather to share; merged row
// pointers, 7 kernel rows of 21 floats per tile. mc: L2 budget 512 KiB / (3 * 4) is past M, then
// at most ceil(12544 / 8) rounded to 6 = 1572 rows, as when packed.
TEST(HostConvSim, StemOnOneWidePanelTakesRowPointers) {
  const HostConvBlocking b =
      host_conv_blocking(conv(224, 3, 64, 7, 2, 3), 6, 64, 2, kernels::igemm::kBlockingAvx512);
  EXPECT_TRUE(b.merge);
  EXPECT_FALSE(b.pack);
  EXPECT_EQ(b.panels, 1);
  EXPECT_EQ(b.mc, 1572);
  EXPECT_EQ(b.tiles, 2091);
  const HostConvEvents e = host_conv_events(b);
  EXPECT_DOUBLE_EQ(e.gathers, 0);
  EXPECT_DOUBLE_EQ(e.setups, 0);
  EXPECT_DOUBLE_EQ(e.merged, 2091.0 * 1 * 7);
}

// layer1.0.conv3: 1x1 64 -> 256 at 56x56, AVX-512: all weights 64 * 256 * 4 = 64 KiB, so each task
// takes all 4 panels and only M is split: mc = min(512 KiB / 256 = 2048, ceil(3136 / 8) = 392)
// -> 8 blocks of 392 rows; on AVX2 (no all-panels rule) the panels split as before: 192 KiB / 256 =
// 768 rows -> 5 blocks, 2 panels per task (4 / ceil(8 tasks / 5 blocks)).
TEST(HostConvSim, SmallWeightsTakeAllPanelsOnAvx512) {
  const HostConvBlocking w = host_conv_blocking(conv(56, 64, 256, 1, 1, 0), 6, 64, 2, kernels::igemm::kBlockingAvx512);
  EXPECT_EQ(w.panels, 4);
  EXPECT_EQ(w.pb, 4);
  EXPECT_EQ(w.mc, 396);  // ceil(392 / 6) * 6, then equal blocks: ceil(3136 / 8) rounded up to 6
  EXPECT_EQ(w.mblocks, 8);
  EXPECT_TRUE(w.pixel_outer);
  // 1x1 1024 -> 256 at 14x14: 1 MiB of weights, panels split as before (2 blocks x 1 panel).
  const HostConvBlocking d = host_conv_blocking(conv(14, 1024, 256, 1, 1, 0), 6, 64, 2, kernels::igemm::kBlockingAvx512);
  EXPECT_EQ(d.mblocks, 2);
  EXPECT_EQ(d.pb, 1);
  const HostConvBlocking a = host_conv_blocking(conv(56, 64, 256, 1, 1, 0), 6, 64, 2, kernels::igemm::kBlockingAvx2);
  EXPECT_EQ(a.mblocks, 5);
  EXPECT_EQ(a.pb, 2);
}

// layer4.0.downsample.0: 1x1 stride 2, 1024 -> 2048, 14 -> 7. M = 49, K = 1024, 128 panels.
// mc = max(48, 192 KiB / (1024 * 4) = 48) = 48 -> 2 blocks -> equal: ceil(ceil(49/2)/6)*6 = 30;
// tiles 5 + ceil(19/6) = 9 (the 19 rows as 4 + 5 + 5 + 5); 2 threads want 8 tasks: 4 groups of
// 128 / 4 = 32 panels per block.
TEST(HostConvSim, StridedOneByOneSplitsIntoTwoUnequalBlocks) {
  const HostConvBlocking b = host_conv_blocking(conv(14, 1024, 2048, 1, 2, 0), 6, 16, 2);
  EXPECT_FALSE(b.direct);
  EXPECT_FALSE(b.merge);
  EXPECT_FALSE(b.pack);
  EXPECT_EQ(b.m, 49);
  EXPECT_EQ(b.mc, 30);
  EXPECT_EQ(b.mblocks, 2);
  EXPECT_EQ(b.tiles, 9);
  EXPECT_EQ(b.pb, 32);
  EXPECT_FALSE(b.pixel_outer);  // 32 panels x 64 KiB
  EXPECT_NEAR(b.tile_equiv, 5 + 19.0 / 6, 1e-12);
  EXPECT_DOUBLE_EQ(host_conv_events(b).setups, 0);  // 1024 floats per tap: fully hidden
}

TEST(HostConvSim, TilesOfABlockAreEqualAndShortOnesCostTheirRows) {
  // 49 rows in 9 tiles at offsets t * 49 / 9: 0 5 10 16 21 27 32 38 43 49.
  const std::vector<int64_t> rows = {5, 5, 6, 5, 6, 5, 6, 5, 6};
  for (int t = 0; t < 9; ++t) EXPECT_EQ(host_tile_rows(49, 9, t), rows[t]) << t;
  EXPECT_DOUBLE_EQ(host_tile_share(6, 6), 1.0);
  EXPECT_DOUBLE_EQ(host_tile_share(5, 6), 5.0 / 6);
  EXPECT_DOUBLE_EQ(host_tile_share(1, 6), 2.0 / 6);  // load-bound floor
  EXPECT_DOUBLE_EQ(host_tile_share(8, 8), 1.0);
}

// pthreadpool's schedule: contiguous initial ranges, then single tasks stolen from the back.
TEST(HostConvSim, PoolMakespanFollowsRangesAndStealing) {
  EXPECT_DOUBLE_EQ(pool_makespan({}, 2), 0);
  EXPECT_DOUBLE_EQ(pool_makespan({1, 1, 1, 1, 1, 1, 1, 1}, 2), 4);
  EXPECT_DOUBLE_EQ(pool_makespan({3, 1, 2}, 1), 6);
  EXPECT_DOUBLE_EQ(pool_makespan({7}, 2), 7);
  // [5 1 | 1]: thread 1 finishes its task at 1 and steals task 1 (thread 0 is busy until 5).
  EXPECT_DOUBLE_EQ(pool_makespan({5, 1, 1}, 2), 5);
  // Two M blocks of 30 and 19 rows, 4 panel groups each: thread 0 owns the 30-row tasks (120),
  // thread 1 the 19-row ones (76); at 76 thread 0 is inside its third task (60..90) and thread 1
  // steals the fourth: 76 + 30 = 106 against a balanced 98.
  EXPECT_DOUBLE_EQ(pool_makespan({30, 30, 30, 30, 19, 19, 19, 19}, 2), 106);
  // Three threads, 7 tasks: ranges of 3, 2, 2.
  EXPECT_DOUBLE_EQ(pool_makespan({1, 1, 1, 1, 1, 1, 1}, 3), 3);
}

target::Target host(int cores) {
  target::Target t;
  t.cores = cores;
  t.clock_ghz = 1;
  t.offchip_gbs = 20;
  t.host_conv.enabled = true;
  t.host_conv.mr = 6;
  t.host_conv.nr = 16;
  t.host_conv.l2_gbs = 1e12;  // effectively free unless a test says otherwise
  t.host_conv.l3_gbs = 1e12;
  t.host_conv.dram_gbs = 1e12;
  t.host_conv.l2_bytes_per_core = 512 << 10;
  t.host_conv.l3_bytes = 32 << 20;
  return t;
}

// The downsample on 2 threads, 10 cycles per full-tile K step: a 30-row task is 32 panels x 5
// tiles x 1024 x 10 = 1638400 cycles, a 19-row one 32 x 19/6 x 10240. Thread 1 runs its 4
// short tasks, then steals thread 0's last long one (as in PoolMakespanFollowsRangesAndStealing).
TEST(HostConvSim, BusiestThreadCarriesTheUnequalBlocks) {
  const target::Target t = host(2);
  const HostConvTime h = host_conv_time(conv(14, 1024, 2048, 1, 2, 0), t, 10, true);
  const double big = 32 * 5 * 10240.0, small = 32 * (19.0 / 6) * 10240;
  EXPECT_EQ(h.tasks, 8);
  EXPECT_NEAR(h.busy, 4 * big + 4 * small, 1e-3);  // weights and input arrive all but free
  EXPECT_NEAR(h.cycles, 4 * small + big, 1e-3);
  EXPECT_NEAR(h.weight_wait, 0, 1e-3);
  EXPECT_GT(h.cycles, h.busy / 2 * 1.08);  // 8% over a perfect split
  target::Target off = t;
  off.host_conv.enabled = false;
  EXPECT_EQ(host_conv_time(conv(14, 1024, 2048, 1, 2, 0), off, 10, true).cycles, 0);
}

// One thread, 1 GHz, 1 cycle per K step: the downsample runs block 0 (5 full tiles) then block
// 1 (19/6 tiles), each over all 128 panels of 64 KiB in 4 K blocks (the K-split path: the
// weights stream through L1). Block 0 makes the first pass from DRAM at 16.384 GB/s: 4000 ns a
// panel, added whole to the FMAs. Block 1 re-reads the 8 MiB from L3 (65.536 GB/s: 1000 ns a
// panel), which its panel's 1024 x 19/6 = 3242.7 cycles of FMAs hide. Its input streams behind
// the FMAs.
TEST(HostConvSim, StreamedWeightsAddTheirFirstPassAndOverlapLaterOnes) {
  target::Target t = host(1);
  t.host_conv.dram_gbs = 16.384;
  t.host_conv.l3_gbs = 65.536;
  const kernels::ConvParams p = conv(14, 1024, 2048, 1, 2, 0);
  const HostConvTime h = host_conv_time(p, t, 1, true);
  const double fmas0 = 128 * 5 * 1024.0, fmas1 = 128 * 1024 * 19.0 / 6;
  const double wait0 = 128 * 4000.0;
  EXPECT_EQ(h.tasks, 2);
  EXPECT_NEAR(h.weight_wait, wait0, 1e-6);
  EXPECT_NEAR(h.input_stream, 0, 1e-6);
  EXPECT_NEAR(h.cycles, fmas0 + wait0 + fmas1, 1e-6);
  // The plan's weights fit the L3: the first pass comes from there too (1000 ns a panel, whole).
  EXPECT_NEAR(host_conv_time(p, t, 1, false).weight_wait, 128 * 1000.0, 1e-6);
  // A slower L3 (8.192 GB/s: 8000 ns a panel): block 1 waits what its FMAs do not cover.
  t.host_conv.l3_gbs = 8.192;
  EXPECT_NEAR(host_conv_time(p, t, 1, true).weight_wait, wait0 + (128 * 8000.0 - fmas1), 1e-6);
  // Two threads. Every task is at the same position as its panel group's other task, so all 8
  // (4 groups of 32 panels x 2 M blocks) make first passes, two at a time over the same panels:
  // one copy crosses, each reader at the whole 16.384 GB/s (4000 ns a panel), not half of it.
  target::Target t2 = host(2);
  t2.host_conv.dram_gbs = 16.384;
  EXPECT_NEAR(host_conv_time(p, t2, 1, true).weight_wait, 8 * 32 * 4000.0, 1e-6);
}

// A task whose panels stay in L2 (pixel-outer: 1x1 64 -> 64, 56x56, one thread, all 4 panels of
// 4 KiB in each of 5 blocks of rows) fetches them during its first tile: the first block waits
// each panel's transfer from DRAM less the first tile's 64 K steps; the later ones re-read them
// from L2 (all but free).
TEST(HostConvSim, PanelsKeptInL2OverlapTheirFirstTile) {
  target::Target t = host(1);
  t.host_conv.dram_gbs = 0.001;  // 4096 B: 4096000 ns
  const kernels::ConvParams p = conv(56, 64, 64, 1, 1, 0);
  const HostConvBlocking b = host_conv_blocking(p, 6, 16, 1);
  ASSERT_TRUE(b.pixel_outer);
  ASSERT_EQ(b.kblocks, 1);
  ASSERT_EQ(b.mblocks, 5);
  EXPECT_NEAR(host_conv_time(p, t, 1, true).weight_wait, 4 * (4096000.0 - 64), 1e-3);
}

// A K-split call before the last K block stores partial sums and costs partial_call_cycles; the
// last runs the epilogue and costs call_cycles. The downsample (one thread, 4 K blocks a panel):
// 9 tiles x 128 panels, each 1 full call and 3 partial ones.
TEST(HostConvSim, PartialCallsCostTheirOwnCycles) {
  target::Target t = host(1);
  t.host_conv.call_cycles = 100;
  t.host_conv.partial_call_cycles = 100;
  const kernels::ConvParams p = conv(14, 1024, 2048, 1, 2, 0);
  ASSERT_EQ(host_conv_blocking(p, 6, 16, 1).kblocks, 4);
  const double all_full = host_conv_time(p, t, 1, false).busy;
  t.host_conv.partial_call_cycles = 10;
  EXPECT_NEAR(all_full - host_conv_time(p, t, 1, false).busy, 9 * 128 * 3 * 90.0, 1e-6);
  t.host_conv.call_cycles = 40;  // the full call alone moves by its own difference
  EXPECT_NEAR(all_full - host_conv_time(p, t, 1, false).busy, 9 * 128 * (3 * 90.0 + 60), 1e-6);
}

TEST(HostConvSim, SetupExposureFallsLinearlyBetweenTheCalibrationTaps) {
  EXPECT_DOUBLE_EQ(host_setup_exposure(10), 1);
  EXPECT_DOUBLE_EQ(host_setup_exposure(24), 1);
  EXPECT_DOUBLE_EQ(host_setup_exposure(76), 0.5);
  EXPECT_DOUBLE_EQ(host_setup_exposure(128), 0);
  EXPECT_DOUBLE_EQ(host_setup_exposure(1024), 0);
}

// layer1.0.conv2: 3x3 pad 1, 64 -> 64, 56x56, 2 threads. mc = 192 KiB / 256 = 768 -> 5 blocks ->
// equal: ceil(ceil(3136/5)/6)*6 = 630; tiles 4 * 105 + ceil(616/6) = 523 (the last block's 103
// tiles: 101 of 6 rows, 2 of 5); setups 523 * 4 panels * 9 taps * (128 - 64) / 104; 8 tasks
// wanted: 2 panels per task, whose 2 * 576 * 16 floats fit the L2 budget (pixel-outer).
TEST(HostConvSim, ThreeByThreePaysExposedSetupPerTilePanelTap) {
  const HostConvBlocking b = host_conv_blocking(conv(56, 64, 64, 3, 1, 1), 6, 16, 2);
  EXPECT_FALSE(b.merge);
  EXPECT_EQ(b.tap_len, 64);
  EXPECT_EQ(b.mc, 630);
  EXPECT_EQ(b.mblocks, 5);
  EXPECT_EQ(b.tiles, 523);
  EXPECT_EQ(b.pb, 2);
  EXPECT_TRUE(b.pixel_outer);
  EXPECT_NEAR(b.tile_equiv, 4 * 105 + 101 + 2 * 5.0 / 6, 1e-9);
  EXPECT_NEAR(host_conv_events(b).setups, 523.0 * 4 * 9 * 64 / 104, 1e-9);
  // 10 tasks (5 blocks x 2 panel groups) on 2 threads: 5 each, every task 2 panels x (tiles x
  // 576 K steps x 1 cycle + tiles x 9 taps x 64/104 x 26 cycles of setup).
  target::Target t = host(2);
  t.host_conv.setup_cycles = 26;
  const HostConvTime h = host_conv_time(conv(56, 64, 64, 3, 1, 1), t, 1, true);
  const double setup = 9 * 64.0 / 104 * 26;
  const double full = 2 * 105 * (576 + setup), last = 2 * ((101 + 2 * 5.0 / 6) * 576 + 103 * setup);
  EXPECT_EQ(h.tasks, 10);
  EXPECT_NEAR(h.busy, 8 * full + 2 * last, 1e-6);
  // Thread 0: blocks 0, 1 and half of 2 (5 full tasks); thread 1: the rest (3 full, 2 last).
  EXPECT_NEAR(h.cycles, 5 * full, 1e-6);
}

// Merged kernel-row taps pay merged_setup_cycles each when it is measured, else the row setup
// a short tap pays. The stem on one 64-wide panel, 1 thread, 1 cycle per K step: its tiles'
// full-tile equivalents x 147 K steps, plus 7 taps x the setup per tile.
TEST(HostConvSim, MergedTapsPayTheirOwnSetup) {
  const kernels::ConvParams stem = conv(224, 3, 64, 7, 2, 3);
  target::Target t = host(1);
  t.host_conv.nr = 64;
  t.host_conv.l1_weights_bytes = kernels::igemm::kBlockingAvx512.l1_weights;
  t.host_conv.l2_input_bytes = kernels::igemm::kBlockingAvx512.l2_input;
  t.host_conv.all_panels_bytes = kernels::igemm::kBlockingAvx512.all_panels_weights;
  t.host_conv.setup_cycles = 10;
  const HostConvBlocking b = host_conv_blocking(stem, 6, 64, 1, kernels::igemm::kBlockingAvx512);
  ASSERT_TRUE(b.merge && !b.pack);
  const double fmas = b.tile_equiv * 147;
  // Not measured: the short tap's setup (21 floats: fully exposed).
  EXPECT_NEAR(host_conv_time(stem, t, 1, false).busy, fmas + b.tiles * 7 * 10.0, 1e-6);
  t.host_conv.merged_setup_cycles = 40;
  EXPECT_NEAR(host_conv_time(stem, t, 1, false).busy, fmas + b.tiles * 7 * 40.0, 1e-6);
  // An unmerged conv keeps the row setup.
  const kernels::ConvParams wide = conv(32, 128, 64, 3, 1, 1);
  t.host_conv.merged_setup_cycles = 0;
  const double a = host_conv_time(wide, t, 1, false).busy;
  t.host_conv.merged_setup_cycles = 1000;
  EXPECT_DOUBLE_EQ(host_conv_time(wide, t, 1, false).busy, a);
}

// Strided rows (a 1x1 at stride 2) pay strided_step_cycles per full-tile K step, in either loop
// order; a 3x3 at stride 2 reads each row's taps back to back (pixels 2x, 2x+1, 2x+2: no gaps),
// and stride-1 rows and the packed stem are contiguous.
TEST(HostConvSim, OnlyRowsWithGapsPayTheStridedStep) {
  target::Target t = host(1);
  t.host_conv.strided_step_cycles = 1;
  // 1x1 stride 2, 256 -> 512, 56 -> 28: M = 784 in 5 blocks of 162 rows (+136): 4 x 27 full
  // tiles, then 21 of 6 rows and 2 of 5; 32 panels of 256 x 16 floats (512 KiB): panel-outer.
  // Zero-cost FMAs isolate it: 32 panels x 256 K steps a tile.
  const kernels::ConvParams ds = conv(56, 256, 512, 1, 2, 0);
  const HostConvBlocking b = host_conv_blocking(ds, 6, 16, 1);
  EXPECT_TRUE(b.strided_rows);
  EXPECT_FALSE(b.pixel_outer);
  EXPECT_EQ(b.tiles, 131);
  EXPECT_NEAR(b.tile_equiv, 108 + 21 + 2 * 5.0 / 6, 1e-9);
  EXPECT_NEAR(host_conv_time(ds, t, 0, false).cycles, b.tile_equiv * 32 * 256, 1e-3);
  // 1x1 stride 2, 128 -> 256, 64 -> 32: pixel-outer (16 panels of 8 KiB), M = 1024 in 3 blocks
  // of 342 rows (+340): 57 + 57 full tiles, then 55 of 6 rows and 2 of 5; 128 K steps a tile.
  const kernels::ConvParams po = conv(64, 128, 256, 1, 2, 0);
  EXPECT_TRUE(host_conv_blocking(po, 6, 16, 1).pixel_outer);
  EXPECT_NEAR(host_conv_time(po, t, 0, false).cycles, (57 + 57 + 55 + 2 * 5.0 / 6) * 16 * 128, 1e-3);
  EXPECT_FALSE(host_conv_blocking(conv(28, 256, 256, 3, 2, 1), 6, 16, 1).strided_rows);
  EXPECT_FALSE(host_conv_blocking(conv(28, 256, 256, 3, 1, 1), 6, 16, 1).strided_rows);
  EXPECT_FALSE(host_conv_blocking(conv(224, 3, 64, 7, 2, 3), 6, 16, 1).strided_rows);
}

// Where a later pass over a layer's weights reads from: L2 when they fit one core's; else the
// measured re-read of the smallest probed size that holds them, memory past the largest; with
// nothing measured, the L3 when they fit it.
TEST(HostConvSim, RereadsUseTheProbedBandwidthForTheirSize) {
  target::Target t = host(1);
  t.host_conv.l2_gbs = 90;
  t.host_conv.l3_gbs = 60;
  t.host_conv.dram_gbs = 15;
  EXPECT_DOUBLE_EQ(host_reread_gbs(400 << 10, t), 90);
  EXPECT_DOUBLE_EQ(host_reread_gbs(8 << 20, t), 60);     // unmeasured: fits the 32 MiB L3
  EXPECT_DOUBLE_EQ(host_reread_gbs(40 << 20, t), 15);
  t.host_conv.reread_gbs = {50, 40, 20, 16};              // 2, 4, 8, 16 MiB
  EXPECT_DOUBLE_EQ(host_reread_gbs(400 << 10, t), 90);
  EXPECT_DOUBLE_EQ(host_reread_gbs(1 << 20, t), 50);
  EXPECT_DOUBLE_EQ(host_reread_gbs(3 << 20, t), 40);
  EXPECT_DOUBLE_EQ(host_reread_gbs(8 << 20, t), 20);      // layer4.0.downsample.0's 8 MiB
  EXPECT_DOUBLE_EQ(host_reread_gbs(12 << 20, t), 16);
  EXPECT_DOUBLE_EQ(host_reread_gbs(20 << 20, t), 15);
  // One thread, 1 GHz: the downsample's first M block reads its 128 panels of 64 KiB from DRAM
  // (65536 / 15 ns each, streamed through L1 on the K split: added whole), the second re-reads
  // the 8 MiB at 20 GB/s (3276.8 ns each), of which its panel's 1024 x 19/6 cycles of FMAs hide
  // all but 34.13.
  const HostConvTime h = host_conv_time(conv(14, 1024, 2048, 1, 2, 0), t, 1, true);
  EXPECT_NEAR(h.weight_wait, 128 * (65536 / 15.0) + 128 * (3276.8 - 1024 * 19.0 / 6), 1e-6);
}

// The activations a conv reads stream behind its FMAs up to the largest re-read probe (16 MiB,
// at that probe's 24 GB/s here) and come from DRAM past it (16 GB/s), adding. One thread, 1 GHz.
TEST(HostConvSim, ActivationsPastTheCachesComeFromDram) {
  target::Target t = host(1);
  t.host_conv.dram_gbs = 16;
  t.host_conv.reread_gbs = {64, 48, 32, 24};  // 2, 4, 8, 16 MiB
  const double near = 16777216 / 24.0, far = 50331648 / 16.0;  // 16 MiB cached, 48 MiB from DRAM
  // 1x1 256 -> 64 over a 256x256 input: 64 MiB. With free FMAs nothing hides the cached part.
  const kernels::ConvParams wide_in = conv(256, 256, 64, 1, 1, 0);
  EXPECT_NEAR(host_conv_time(wide_in, t, 0, false).input_stream, near + far, 1e-3);
  // At 1 cycle a K step the FMAs (65536 rows in tiles of 6 x 4 panels x 256 K steps: 11 M
  // cycles) outlast the cached part.
  EXPECT_NEAR(host_conv_time(wide_in, t, 1, false).input_stream, far, 1e-6);
  // 1x1 64 -> 256 adding a residual: the 16 MiB input is all cached, the 64 MiB residual is not.
  const kernels::ConvParams wide_out = conv(256, 64, 256, 1, 1, 0);
  EXPECT_NEAR(host_conv_time(wide_out, t, 1, false, true).input_stream, far, 1e-6);
  EXPECT_NEAR(host_conv_time(wide_out, t, 1, false).input_stream, 0, 1e-6);
  // With the activations' own rate measured (6 GB/s), the part past the caches streams at it;
  // the cached part and the weights' first pass from DRAM do not change.
  target::Target a = t;
  a.host_conv.act_dram_gbs = 6;
  EXPECT_NEAR(host_conv_time(wide_in, a, 1, false).input_stream, 50331648 / 6.0, 1e-6);
  EXPECT_NEAR(host_conv_time(wide_in, a, 0, false).input_stream, near + 50331648 / 6.0, 1e-3);
  EXPECT_NEAR(host_conv_time(wide_out, a, 1, false, true).input_stream, 50331648 / 6.0, 1e-6);
  EXPECT_DOUBLE_EQ(host_conv_time(wide_in, a, 1, true).weight_wait, host_conv_time(wide_in, t, 1, true).weight_wait);
}

TEST(HostConvSim, KernelNamesCarryTheirTile) {
  int r = 0, c = 0;
  EXPECT_TRUE(kernels::igemm::tile_of("conv_f32_igemm_6x16_avx2", &r, &c));
  EXPECT_EQ(r, 6);
  EXPECT_EQ(c, 16);
  EXPECT_TRUE(kernels::igemm::tile_of("conv_f32_igemm_8x32_avx512", &r, &c));
  EXPECT_EQ(r, 8);
  EXPECT_EQ(c, 32);
  EXPECT_FALSE(kernels::igemm::tile_of("conv_f32_dw_avx512", &r, &c));
  EXPECT_FALSE(kernels::igemm::tile_of("conv_f32_winograd_f4x3_avx512", &r, &c));
  EXPECT_FALSE(kernels::igemm::tile_of("", &r, &c));
  EXPECT_FALSE(kernels::igemm::tile_of("conv_f32_igemm_0x32_avx512", &r, &c));
  EXPECT_FALSE(kernels::igemm::tile_of("conv_f32_igemm_99999999999x32_avx512", &r, &c));
  EXPECT_FALSE(kernels::igemm::tile_of("conv_f32_igemm_x32_avx512", &r, &c));
}

// A plan's other igemm kernel is costed on its own tile at the calibrated efficiency: 8x32 does
// 256 of the 6x64 tile's 384 MACs a K step, so its step and its call cost are 2/3 of the
// calibrated ones (calls are free here; see the end). A 1x1
// 32 -> 16 over 16x16 pixels on one thread, 1 cycle a calibrated step, free weights and no
// per-call cost: on 6x64 one 64-wide panel, 43 tiles (41 of 6 rows, 2 of 5) x 32 K steps; on
// 8x32 one 32-wide panel, 32 full tiles x 32 K steps x 2/3.
TEST(HostConvSim, OtherKernelsRunOnTheirOwnTile) {
  target::Target t = host(1);
  t.host_conv.nr = 64;
  const kernels::ConvParams p = conv(16, 32, 16, 1, 1, 0);
  double step = 1;
  const target::Target same = host_conv_for_kernel(t, "conv_f32_igemm_6x64_avx512", &step);
  EXPECT_EQ(same.host_conv.mr, 6);
  EXPECT_EQ(same.host_conv.nr, 64);
  EXPECT_DOUBLE_EQ(step, 1);
  EXPECT_NEAR(host_conv_time(p, same, step, false).cycles, (41 + 2 * 5.0 / 6) * 32, 1e-3);
  const target::Target other = host_conv_for_kernel(t, "conv_f32_igemm_8x32_avx512", &step);
  EXPECT_EQ(other.host_conv.mr, 8);
  EXPECT_EQ(other.host_conv.nr, 32);
  EXPECT_DOUBLE_EQ(step, 2.0 / 3);
  EXPECT_NEAR(host_conv_time(p, other, step, false).cycles, 32 * 32 * 2.0 / 3, 1e-3);
  step = 1;
  EXPECT_EQ(host_conv_for_kernel(t, "conv_f32_dw_avx512", &step).host_conv.mr, 6);
  EXPECT_DOUBLE_EQ(step, 1);
  t.host_conv.call_cycles = 300;
  t.host_conv.partial_call_cycles = 60;
  const target::Target calls = host_conv_for_kernel(t, "conv_f32_igemm_8x32_avx512", &step);
  EXPECT_DOUBLE_EQ(calls.host_conv.call_cycles, 200);
  EXPECT_DOUBLE_EQ(calls.host_conv.partial_call_cycles, 40);
}

// The measured host carries the kernel's budgets, all-panels rule included: layer1.0.conv3 on
// AVX-512's 6x64 runs 8 tasks of 392 rows x all 4 panels (see SmallWeightsTakeAllPanelsOnAvx512),
// so every task fetches 4 panels' weights; without the rule, 2 blocks x 4 tasks of one panel each.
// With slow weights that is 4x the panel fetches, each waited for: with the rule 8 first-pass
// fetches (the two tasks at position 0 read the same panels: one copy, each at the whole
// bandwidth) and 24 later ones at half of it each; without, 8 first-pass fetches at the whole
// bandwidth (two readers per panel). (8 + 24 x 2) / 8 = 7.
TEST(HostConvSim, TimeReplaysTheAllPanelsRule) {
  target::Target t = host(2);
  t.host_conv.nr = 64;
  t.host_conv.l2_gbs = t.host_conv.l3_gbs = t.host_conv.dram_gbs = 0.1;
  t.host_conv.l1_weights_bytes = kernels::igemm::kBlockingAvx512.l1_weights;
  t.host_conv.l2_input_bytes = kernels::igemm::kBlockingAvx512.l2_input;
  t.host_conv.all_panels_bytes = kernels::igemm::kBlockingAvx512.all_panels_weights;
  const HostConvTime all = host_conv_time(conv(56, 64, 256, 1, 1, 0), t, 1, true);
  t.host_conv.all_panels_bytes = 0;
  const HostConvTime split = host_conv_time(conv(56, 64, 256, 1, 1, 0), t, 1, true);
  EXPECT_EQ(all.tasks, 8);
  EXPECT_EQ(split.tasks, 8);
  EXPECT_GT(split.weight_wait, 0);
  EXPECT_NEAR(all.weight_wait / split.weight_wait, 7.0, 0.2);
}

// A 1x1 stride-1 conv reads its rows in place: no setup, no gather.
TEST(HostConvSim, DirectOneByOneHasNoTapSetup) {
  const HostConvBlocking b = host_conv_blocking(conv(56, 64, 256, 1, 1, 0), 6, 16, 1);
  EXPECT_TRUE(b.direct);
  const HostConvEvents e = host_conv_events(b);
  EXPECT_EQ(e.setups + e.gathers, 0);
}

}  // namespace
}  // namespace systolic::sim
