// The task grid of the gathering implicit-GEMM drivers (int8 and bf16, vector and tile), one
// rule for all, GotoBLAS-style: K in equal chunks whose panel slice stays in L1 while an M
// block's tiles pass it; M blocks whose gathered rows (one chunk) stay in L2 while every panel
// sweeps over them; about 4 tasks per thread (an M block times a group of panels), each block
// gathered once unless the pool needs more tasks; with several chunks, the partial sums of a
// task's tiles and panels fit their stack buffer.
#pragma once
#include <algorithm>

namespace systolic::kernels {

struct BlockGrid {
  long kc, chunks;    // K chunk (a multiple of the step) and their count
  long bt, mblocks;   // tiles per M block, blocks
  long pb, pgroups;   // panels per task, panel groups per conv group
};

struct BlockLimits {
  long block_bytes;    // gathered rows of one M block
  long max_tiles;      // tiles per M block
  long weight_bytes;   // a panel's K chunk
  long partial_bytes;  // partial sums of one task
};

constexpr long grid_ceil_div(long a, long b) { return (a + b - 1) / b; }

// The bytes of a panel's K chunk the int8 zmm and the bf16 drivers give BlockLimits::weight_bytes:
// twice `base` (32 KB: half the chunks, each passing its partial sums) except in 1x1 convs with a
// residual. ResNet-50's 3x3 convs on 7x7 and 14x14 ran 5-8% faster at batch 16 on a Xeon's 48 KB
// L1 and 3-8% on a Zen 4's 32 KB one; its 1x1 convs without a residual 2-5% (int8) and 4% (bf16,
// summed) on the Zen 4; its 1x1 convs with a residual ran 7% slower in 32 KB chunks on the Xeon
// (int8 512->2048) and 3-6% on the Zen 4 (int8 and bf16), their residual rows competing for L1.
constexpr long weight_chunk_bytes(long base, bool window, bool residual) {
  return window || !residual ? 2 * base : base;
}

// Whether the weights are the larger operand: the tiles (of mr rows) hold fewer pixels than the
// panels (nr wide) hold channels, as in late layers at small batch. block_grid then splits the
// panels first, and the vector drivers gather the windows once for all tasks.
constexpr bool panels_first(long tiles, long mr, long panels, long nr) { return tiles * mr < panels * nr; }

// `k` elements of `elem` bytes in steps of `step`; tiles of `mr` rows and `nr`-wide panels whose
// partial sums take `tile_partial` bytes; `threads` in the pool.
inline BlockGrid block_grid(long k, long step, long elem, long mr, long nr, long tiles, long panels, long groups,
                            long threads, long tile_partial, const BlockLimits& lim) {
  BlockGrid b;
  const long kc_max = std::max(step, lim.weight_bytes / (nr * elem) / step * step);
  b.chunks = grid_ceil_div(k, kc_max);
  b.kc = grid_ceil_div(grid_ceil_div(k, b.chunks), step) * step;
  b.bt = std::clamp<long>(lim.block_bytes / (mr * b.kc * elem), 1, lim.max_tiles);
  const long want = threads > 1 ? 4 * threads : 1;  // tasks for the pool to balance
  b.mblocks = grid_ceil_div(tiles, b.bt);
  if (panels_first(tiles, mr, panels, nr)) {
    // Every M block streams all of its panels' weights again (ResNet-50's 7x7 layers at batch
    // 1 ran five M blocks of two tiles over 2.4 MB of weights).
    b.pgroups = std::min(panels, grid_ceil_div(want, b.mblocks * groups));
    if (b.mblocks * b.pgroups * groups < want) b.mblocks = std::min(tiles, grid_ceil_div(want, b.pgroups * groups));
  } else {
    if (b.mblocks * groups < want) b.mblocks = std::min(tiles, grid_ceil_div(want, groups));
    b.pgroups = std::min(panels, grid_ceil_div(want, b.mblocks * groups));
  }
  b.bt = grid_ceil_div(tiles, b.mblocks);
  b.mblocks = grid_ceil_div(tiles, b.bt);  // equal blocks
  // With several chunks, a task's partial sums (pb panels of bt tiles) fit their buffer: pb
  // counted from what fits, not from the bytes over all panels, whose rounding made pb one too
  // many and sent ResNet-50's 1x1 convs into 2048 channels (32 panels, K of 512-1024) to the
  // one-tile tasks below, each streaming its panel's whole K of weights from L2 for six pixels.
  if (b.chunks > 1)
    b.pgroups = std::max(b.pgroups, grid_ceil_div(panels, std::max(1L, lim.partial_bytes / (b.bt * tile_partial))));
  b.pb = grid_ceil_div(panels, b.pgroups);
  b.pgroups = grid_ceil_div(panels, b.pb);  // equal groups
  // Where a block or the partial sums still overflow their buffers (tile drivers: 32-row tiles),
  // one tile of one panel per task always fits.
  if (b.bt * mr * b.kc * elem > lim.block_bytes || (b.chunks > 1 && b.pb * b.bt * tile_partial > lim.partial_bytes)) {
    b.bt = 1, b.mblocks = tiles;
    b.pb = 1, b.pgroups = panels;
  }
  return b;
}

}  // namespace systolic::kernels
