// Software prefetch of a conv epilogue's residual and destination rows, ahead of the tiles.
//
// An NHWC conv's epilogue reads each output pixel's residual and writes its outputs a panel
// (64 channels) at a time: one short access per pixel row and panel, of data last touched
// several layers earlier, which the hardware prefetcher does not fetch in time. While an M
// block's first panel passes, each tile asks for the rows kPrefetchTiles tiles ahead over all of
// the task's channels, so the later panels find them in cache.
#pragma once

namespace systolic::kernels {

// About one DRAM latency of tile work.
constexpr long kPrefetchTiles = 3;

// Prefetches pixel rows [lo, hi): bytes [b0, b1) of each residual row (stride rs bytes; none
// when res is null) and destination row (stride ds bytes, for writing; none when dst is null).
inline void prefetch_rows(const void* res, long rs, const void* dst, long ds, long lo, long hi, long b0, long b1) {
  const auto* r = static_cast<const char*>(res);
  const auto* d = static_cast<const char*>(dst);
  for (long i = lo; i < hi; ++i)
    for (long b = b0; b < b1; b += 64) {
      if (r) __builtin_prefetch(r + i * rs + b, 0, 3);
      if (d) __builtin_prefetch(d + i * ds + b, 1, 3);
    }
}

// The rows a tile of `rows` pixels at m asks for (the first tile of a pass also asks for the
// tiles in between), within M pixels.
inline void prefetch_ahead(long m, long rows, bool first, long M, long* lo, long* hi) {
  *lo = first ? m + rows : m + kPrefetchTiles * rows;
  *hi = m + (kPrefetchTiles + 1) * rows < M ? m + (kPrefetchTiles + 1) * rows : M;
}

}  // namespace systolic::kernels
