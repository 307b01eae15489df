// The Winograd conv kernels' blocking as plain data: the kernel (conv_winograd.h) runs by it,
// its table entries (conv_winograd.cc) accept by it and the host cost model
// (sim/host_winograd.cc) replays it.
#pragma once
#include <algorithm>

#include "kernels/conv/conv.h"
#include "kernels/conv/igemm_blocking.h"

namespace systolic::kernels::winograd {

// Output tiles of side `tile` covering `outputs` outputs.
constexpr int ceil_tiles(int outputs, int tile) { return (outputs + tile - 1) / tile; }

// Tiles per GEMM block: the block's transformed input (elems x tiles x ic floats) stays in L2
// (twice the direct kernels' input budget: nothing else of the block's but one panel's results
// needs it) while every panel's GEMMs sweep over it. Each block streams all of the packed
// weights again, so blocks are as large as that allows, and of equal size.
inline long block_tiles(const ConvParams& p, int elems, long tiles, int mr, long l2_input) {
  const long icp = (p.ic + 15) / 16 * 16;
  const long tb = std::max<long>(mr, 2 * l2_input / (elems * icp * 4) / mr * mr);
  if (tb >= tiles) return tiles;
  return std::min(tiles, long(igemm::ceil_div(igemm::ceil_div(tiles, igemm::ceil_div(tiles, tb)), mr)) * mr);
}

// Tiles a block must hold for the weights it streams to be worth it: a block does elems x tiles
// x ic x oc MACs on elems x ic x oc packed weights, tiles / 2 FLOP per byte. Below 24 (F(4x4) on
// ResNet-50's 512-channel stage at any batch and its 256-channel one at batch 1: blocks of 12
// and 16 tiles) the larger packed weights come from memory once for too little work (figures in
// docs/benchmarks.md, "Winograd 3x3 convs").
constexpr long kMinBlockTiles = 24;

// How run() cuts a conv into tasks: blocks of tb tiles, and, with fewer blocks than twice the
// threads, the NR-wide panels into groups too (each such task transforms its block's input
// again).
struct Grid {
  int tiles_y = 0, tiles_x = 0;
  long tiles = 0, tb = 0, blocks = 0;
  int panels = 0, groups = 1;
};
inline Grid grid(const ConvParams& p, int tile, int elems, int mr, int nr, long threads, const igemm::Blocking& bl) {
  Grid g;
  g.tiles_y = ceil_tiles(p.oh, tile), g.tiles_x = ceil_tiles(p.ow, tile);
  g.tiles = long(p.n) * g.tiles_y * g.tiles_x;
  g.tb = block_tiles(p, elems, g.tiles, mr, bl.l2_input);
  g.blocks = igemm::ceil_div(g.tiles, g.tb);
  g.panels = igemm::ceil_div(p.oc, nr);
  const long want = threads > 1 ? 2 * threads : 1;
  g.groups = int(std::min<long>(g.panels, std::max<long>(1, igemm::ceil_div(want, g.blocks))));
  return g;
}

// Block b's first tile: the tiles split evenly over the blocks at whole GEMM tiles of mr rows
// (not blocks of tb and a short last one: ResNet-50's 196 tiles at 28x28 and batch 4 made
// blocks of 54, 54, 54 and 34, 108 tiles for one thread and 88 for the other).
inline long block_start(const Grid& g, long b, int mr) {
  return b >= g.blocks ? g.tiles : b * g.tiles / g.blocks / mr * mr;
}
// The largest block block_start() makes (what a block's scratch holds).
inline long block_max(const Grid& g, int mr) {
  long m = 0;
  for (long b = 0; b < g.blocks; ++b) m = std::max(m, block_start(g, b + 1, mr) - block_start(g, b, mr));
  return m;
}

}  // namespace systolic::kernels::winograd
