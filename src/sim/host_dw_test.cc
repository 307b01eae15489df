// The depthwise kernel's cost structure (sim/host_dw.h), worked by hand.
#include "sim/host_dw.h"

#include <gtest/gtest.h>

namespace systolic::sim {
namespace {

kernels::ConvParams dw(int n, int c, int hw, int stride) {
  kernels::ConvParams p;
  p.n = n;
  p.ih = p.iw = hw;
  p.ic = p.oc = p.groups = c;
  p.kh = p.kw = 3;
  p.sh = p.sw = stride;
  p.pad_t = p.pad_l = 1;
  p.oh = p.ow = (hw + 2 - 3) / stride + 1;
  return p;
}

TEST(HostDepthwise, RowSegmentsAreOutputRowsOf16Channels) {
  EXPECT_DOUBLE_EQ(host_dw_segments(dw(1, 128, 56, 1)), 56.0 * 8);
  EXPECT_DOUBLE_EQ(host_dw_segments(dw(1, 128, 56, 2)), 28.0 * 8);
  // 24 channels are padded to two rows of 16; every image has its own rows.
  EXPECT_DOUBLE_EQ(host_dw_segments(dw(4, 24, 14, 1)), 4.0 * 14 * 2);
}

TEST(HostDepthwise, ReadsWritesAndRowsAddUp) {
  target::Target t;
  t.clock_ghz = 2;
  t.cores = 2;
  const kernels::ConvParams p = dw(1, 32, 8, 1);  // 8 rows x 2 segments
  // Not measured: no cost (the caller streams the bytes at the vector bandwidth instead).
  EXPECT_DOUBLE_EQ(host_dw_cycles(p, 1000, 1000, t), 0);
  t.host_conv.dw_read_gbs = 50;
  t.host_conv.dw_write_gbs = 25;
  t.host_conv.dw_row_cycles = 30;
  // 1000 bytes at 50 GB/s = 20 ns, 500 at 25 = 20 ns: 40 ns = 80 cycles at 2 GHz; 16 segments of
  // 30 cycles over 2 threads = 240.
  EXPECT_DOUBLE_EQ(host_dw_cycles(p, 1000, 500, t), 80 + 240);
  t.host_conv.dw_write_gbs = 0;  // half measured: not measured
  EXPECT_DOUBLE_EQ(host_dw_cycles(p, 1000, 500, t), 0);
}

}  // namespace
}  // namespace systolic::sim
