// The host conv kernel's structure model (sim/host_conv.h) on hand-computed ResNet-50 layers.
#include <gtest/gtest.h>

#include "sim/host_conv.h"

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
  EXPECT_DOUBLE_EQ(host_conv_reread_bytes(b, 16), 0);
}

// layer4.0.downsample.0: 1x1 stride 2, 1024 -> 2048, 14 -> 7. M = 49, K = 1024, 128 panels.
// mc = max(48, 192 KiB / (1024 * 4) = 48) = 48 -> 2 blocks -> equal: ceil(ceil(49/2)/6)*6 = 30;
// tiles 5 + ceil(19/6) = 9; setups 9 * 128 * 1 tap; weights (8 MiB) re-read once more.
TEST(HostConvSim, StridedOneByOneRereadsItsWeightsPerMBlock) {
  const HostConvBlocking b = host_conv_blocking(conv(14, 1024, 2048, 1, 2, 0), 6, 16, 2);
  EXPECT_FALSE(b.direct);
  EXPECT_FALSE(b.merge);
  EXPECT_FALSE(b.pack);
  EXPECT_EQ(b.m, 49);
  EXPECT_EQ(b.mc, 30);
  EXPECT_EQ(b.mblocks, 2);
  EXPECT_EQ(b.tiles, 9);
  EXPECT_DOUBLE_EQ(host_conv_events(b).setups, 0);  // 1024 floats per tap: fully hidden
  EXPECT_DOUBLE_EQ(host_conv_reread_bytes(b, 16), 8.0 * 1024 * 1024);

  // 2 cores at 3 GHz; 8 MiB > 1 MiB L2 but <= 32 MiB L3 at 100 GB/s: 8388608 / 100 ns * 3 GHz
  // = 251658.24 cycles (its 1024-float taps hide their setup).
  target::Target t;
  t.cores = 2;
  t.clock_ghz = 3;
  t.offchip_gbs = 20;
  t.host_conv.enabled = true;
  t.host_conv.setup_cycles = 20;
  t.host_conv.l2_gbs = 300;
  t.host_conv.l3_gbs = 100;
  t.host_conv.l2_bytes_per_core = 1 << 20;
  t.host_conv.l3_bytes = 32 << 20;
  EXPECT_DOUBLE_EQ(host_reread_gbs(8.0 * (1 << 20), t), 100);
  EXPECT_DOUBLE_EQ(host_reread_gbs(0.5 * (1 << 20), t), 300);
  EXPECT_DOUBLE_EQ(host_reread_gbs(64.0 * (1 << 20), t), 20);
  // Both M blocks run at once on the 2 cores: the re-read comes with the first pass, from DRAM
  // (20 GB/s: 1258291.2 cycles) when the plan's weights outgrow the L3, else from L3.
  EXPECT_NEAR(host_conv_extra_cycles(conv(14, 1024, 2048, 1, 2, 0), t, true), 1258291.2, 1e-6);
  EXPECT_NEAR(host_conv_extra_cycles(conv(14, 1024, 2048, 1, 2, 0), t, false), 251658.24, 1e-6);
  t.cores = 1;  // one core: the second block follows the first, from L3 (setup is 0 here)
  EXPECT_NEAR(host_conv_extra_cycles(conv(14, 1024, 2048, 1, 2, 0), t, true),
              8388608 / 100.0 * 3, 1e-6);
  t.cores = 2;
  t.host_conv.enabled = false;
  EXPECT_EQ(host_conv_extra_cycles(conv(14, 1024, 2048, 1, 2, 0), t, true), 0);
}

TEST(HostConvSim, SetupExposureFallsLinearlyBetweenTheCalibrationTaps) {
  EXPECT_DOUBLE_EQ(host_setup_exposure(10), 1);
  EXPECT_DOUBLE_EQ(host_setup_exposure(24), 1);
  EXPECT_DOUBLE_EQ(host_setup_exposure(76), 0.5);
  EXPECT_DOUBLE_EQ(host_setup_exposure(128), 0);
  EXPECT_DOUBLE_EQ(host_setup_exposure(1024), 0);
}

// layer1.0.conv2: 3x3 pad 1, 64 -> 64, 56x56, 2 threads. mc = 192 KiB / 256 = 768 -> 5 blocks ->
// equal: ceil(ceil(3136/5)/6)*6 = 630; tiles 4 * 105 + ceil(616/6) = 523; setups 523 * 4 panels *
// 9 taps * (128 - 64) / 104; the 144 KiB of weights fit L2 and are re-read 4 more times.
TEST(HostConvSim, ThreeByThreePaysExposedSetupPerTilePanelTap) {
  const HostConvBlocking b = host_conv_blocking(conv(56, 64, 64, 3, 1, 1), 6, 16, 2);
  EXPECT_FALSE(b.merge);
  EXPECT_EQ(b.tap_len, 64);
  EXPECT_EQ(b.mc, 630);
  EXPECT_EQ(b.mblocks, 5);
  EXPECT_EQ(b.tiles, 523);
  EXPECT_NEAR(host_conv_events(b).setups, 523.0 * 4 * 9 * 64 / 104, 1e-9);
  EXPECT_DOUBLE_EQ(host_conv_reread_bytes(b, 16), 4.0 * 4 * 576 * 16 * 4);
  target::Target t;
  t.cores = 2;
  t.clock_ghz = 3;
  t.host_conv.enabled = true;
  t.host_conv.setup_cycles = 26;
  t.host_conv.l2_gbs = 294.912;  // 589824 bytes -> 2000 ns -> 6000 cycles
  t.host_conv.l2_bytes_per_core = 1 << 20;
  t.offchip_gbs = 14.7456;  // 147456 bytes from DRAM: 10000 ns -> 30000 cycles
  // 523 * 36 * 64 / 104 * 26 / 2 = 150624 cycles of setup; of the 4 re-reads, 1 runs alongside
  // the first pass (2 cores) from DRAM, 3 later ones from L2 (3/4 of 6000 cycles).
  EXPECT_NEAR(host_conv_extra_cycles(conv(56, 64, 64, 3, 1, 1), t, true), 150624 + 30000 + 4500, 1e-6);
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
