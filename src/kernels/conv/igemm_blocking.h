// The implicit-GEMM conv kernel's blocking constants and K-split rule, as plain data: the kernel
// (conv_igemm.h) runs by them and the host cost model (sim/host_conv.cc) replays them.
#pragma once
#include <algorithm>
#include <string>

namespace systolic::kernels::igemm {

constexpr int ceil_div(long a, long b) { return static_cast<int>((a + b - 1) / b); }

// Kernel rows up to this many floats (kw * icg) are merged into one tap when contiguous.
constexpr int kMaxMerge = 64;
// Packed tiles hold up to this many floats of K per row (packs_tiles() uses the same bound).
constexpr int kMaxPackK = 512;
// A task runs its tiles pixel-outer when all its panels' weights fit in this much of L2.
constexpr long kPixelOuterWeights = 192 * 1024;

// Cache budgets of the machines an ISA's kernels target.
struct Blocking {
  // One K block of a panel's weights (kc x NR floats) stays in L1 while an M block's tiles
  // stream past it; a longer K (when splits_k() allows) is split into blocks whose partial
  // sums wait in dst. Without the split a 6x64 tile streams its 256 bytes of weights per k step from L2
  // (1x1 convs at batch 16 ran at ~65% of peak instead of ~80%).
  long l1_weights;
  // How much of an M block's input rows stays in L2 while the weight panels sweep over it.
  long l2_input;
  // A task takes every panel, splitting only M, when all the weights are at most this (0: never):
  // short-K convs that write many channels then write whole pixel rows in one pass instead of
  // one panel's stripe per pass (layer2's 1x1 128 -> 512 convs with their residual 10-15% faster
  // inside ResNet-50 at batch 1 on AVX-512; docs/benchmarks.md).
  long all_panels_weights = 0;
};
// AVX-512 Xeons: 48 KiB L1d, 1-2 MiB L2 per core (on a 2 MiB part 512 KiB of input rows per M
// block measured best; 192 KiB lost ~8% on 3x3 convs with 512 channels).
constexpr Blocking kBlockingAvx512{32 * 1024, 512 * 1024, 256 * 1024};
// AVX2 parts: 32 KiB L1d and 256-512 KiB L2 per core (the all-panels split is unmeasured there).
constexpr Blocking kBlockingAvx2{16 * 1024, 192 * 1024};

// The blocking a conv kernel of conv.inc runs with, by name (AVX2's for any other).
inline Blocking blocking_of(const std::string& kernel) {
  return kernel.find("avx512") != std::string::npos ? kBlockingAvx512 : kBlockingAvx2;
}

// The register tile in a conv kernel's name ("conv_f32_igemm_6x16_avx2" -> 6 x 16); false when
// the name carries none (a tile is 1-3 digits each way, neither 0: a name read from a damaged
// plan cannot make it overflow or divide by zero).
inline bool tile_of(const std::string& kernel, int* rows, int* cols) {
  auto number = [](const std::string& s) {
    if (s.empty() || s.size() > 3 || s.find_first_not_of("0123456789") != std::string::npos) return 0;
    return std::stoi(s);
  };
  for (std::size_t at = kernel.find('_'); at != std::string::npos; at = kernel.find('_', at + 1)) {
    const std::size_t x = kernel.find('x', at + 1), end = kernel.find('_', at + 1);
    if (x == std::string::npos || end == std::string::npos || x > end) continue;
    const int r = number(kernel.substr(at + 1, x - at - 1)), c = number(kernel.substr(x + 1, end - x - 1));
    if (r <= 0 || c <= 0) continue;
    *rows = r;
    *cols = c;
    return true;
  }
  return false;
}

// Packed tiles (each tile's merged rows gathered once, then run against every panel) pay for
// the gather only over several panels: with one (ResNet's 7x7 stem, 3 -> 64 channels on 64-wide
// panels) the row-pointer path is faster. A uint8 source is read only through packing.
inline bool packs_over(long panels, bool src_u8) { return src_u8 || panels > 1; }

// One run's task grid: M blocks of mc pixels, each task pb panels of one block, its tiles
// pixel-outer or panel-outer. The kernel runs by it and the host cost model replays it.
struct TaskGrid {
  long mc = 1, mblocks = 1, pb = 1;
  bool pixel_outer = false;
};
inline TaskGrid task_grid(long M, long K, long icg, long panels, int mr, int nr, long threads,
                          bool pack, const Blocking& bl) {
  TaskGrid g;
  // M block: the input rows it reads stay in L2 while every weight panel sweeps over them.
  long mc = std::max<long>(mr * 8, bl.l2_input / (icg * 4) / mr * mr);
  if (mc >= M) mc = M;
  // Enough tasks for the pool to balance: split M further, then the panels (or M only).
  const long want = threads > 1 ? 4 * threads : 1;
  const bool all_panels = pack || panels * K * nr * 4 <= bl.all_panels_weights;
  if (all_panels) {
    mc = std::min(mc, std::max<long>(mr, ceil_div(ceil_div(M, want), mr) * long(mr)));
  } else if (ceil_div(M, mc) * panels < want) {
    const long mb = std::max<long>(1, ceil_div(want, panels));
    mc = std::max<long>(mr, ceil_div(ceil_div(M, mb), mr) * long(mr));
  }
  // Equal blocks (no small remainder block).
  g.mc = std::min(M, ceil_div(ceil_div(M, ceil_div(M, mc)), mr) * long(mr));
  g.mblocks = ceil_div(M, g.mc);
  g.pb = all_panels ? panels : std::max<long>(1, panels / std::max<long>(1, ceil_div(want, g.mblocks)));
  // Pixel-outer order when the task's weights fit in L2 with room for the input block.
  g.pixel_outer = g.pb * K * nr * 4 <= kPixelOuterWeights;
  return g;
}

// Whether a conv with `taps` kernel taps and `tiles` tiles per M block splits K (when K
// outgrows l1_weights): 1x1 convs always; others only with few tiles per block (ResNet-50's
// last stage at batch 1: 9), where each panel's weights would otherwise come from memory for one
// tile and sit in L2 for a handful. With many tiles, re-reading partial sums measured slower.
constexpr int kSplitMaxTiles = 12;
inline bool splits_k(int taps, long tiles) { return taps == 1 || tiles <= kSplitMaxTiles; }

// The K split of `ntaps` taps of `tap_len` floats for NR-wide panels: `taps_per` whole taps per
// block, or, when one tap alone is too long, `chunks` cache-line-multiple chunks of `chunk`
// floats per tap. One block when not `allowed` or when all of K fits.
struct KSplit {
  int blocks = 1, taps_per = 1, chunks = 1, chunk = 0;
};
inline KSplit k_split(int ntaps, int tap_len, int nr, long l1_weights, bool allowed) {
  KSplit s;
  s.taps_per = ntaps;
  const int max_k = int(l1_weights / (long(nr) * 4));
  if (!allowed || long(ntaps) * tap_len <= max_k) return s;
  if (tap_len <= max_k) {  // whole taps, blocks of equal size
    const int nb = ceil_div(ntaps, max_k / tap_len);
    s.taps_per = ceil_div(ntaps, nb);
    s.blocks = ceil_div(ntaps, s.taps_per);
  } else {
    s.taps_per = 1;
    s.chunk = (ceil_div(tap_len, ceil_div(tap_len, max_k)) + 15) / 16 * 16;
    s.chunks = ceil_div(tap_len, s.chunk);
    s.blocks = ntaps * s.chunks;
  }
  return s;
}

}  // namespace systolic::kernels::igemm
