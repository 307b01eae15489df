// Shifted tiles, shared by the int8 and bf16 AMX drivers (qconv_amx.h, bconv_amx.h): a
// stride-1 conv over whole 64-byte K steps of channels copies its source once into a padded
// image (the workspace; out-of-image pixels hold the input's zero points, or zeros) and output
// q of the padded grid (pitch wp) reads padded pixel q + ky * wp + kx for tap (ky, kx), so each
// tap's A tiles load in place, 16 consecutive padded pixels a tile. That replaces the window
// gather (for a 3x3 conv, 9 copies of every source value a run) with one copy; the price is the
// padded grid's rows and columns that are no output, computed and dropped: a grid under
// kShiftedWaste times the output.
//
// An image stem (stride 2, at most 4 channels: ResNet's 7x7 over RGB) runs the same way on its
// space-to-depth form: padded pixel (Y, X) holds the padded source's pixels (2Y + sy, 2X + sx)
// at channels (sy * 2 + sx) * 4 + c (16), and the conv becomes a stride-1 conv of ceil(kh/2) x
// ceil(kw/2) taps (kw's rounded up to the taps a K step spans) over it, its weights rearranged
// to match (zeros where the 7x7 window ends). A 64-byte K step spans 2 (bf16) or 4 (int8) taps
// side by side, so tile rows overlap. A window gather of 147 values a pixel became one pass
// over the image.
#pragma once
#include <pthreadpool.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/threadpool.h"
#include "kernels/amx_block.h"
#include "kernels/conv/conv.h"

namespace systolic::kernels::amx {

constexpr int kTileRows = 32;  // pixels a tile step covers (amx_block.h)

struct Shifted {
  int elem;     // bytes a value: 1 (uint8) or 2 (bf16)
  int pc;       // values a padded pixel holds: the conv's channels, or 16 (space-to-depth)
  int kh, kw;   // the stride-1 conv's taps over the padded image
  int tx;       // taps a 64-byte K step spans: 1, or 64 / (16 x elem) (space-to-depth)
  bool s2d;
  long hp, wp;  // the padded image: (oh + kh - 1) x (ow + kw - 1) pixels
  long grid;    // n * hp * wp: the outputs' grid, in tiles of kTileRows
  long pixels;  // the workspace's pixels: the grid, plus what the last tile's taps read past it
};
constexpr double kShiftedWaste = 1.35;

inline bool shifted(const ConvParams& p, int elem, Shifted* s = nullptr) {
  const int icg = p.ic / p.groups, step = 64 / elem;  // values a K step
  if (p.groups != 1 || p.dh != 1 || p.dw != 1 || p.src_u8) return false;
  Shifted t;
  t.elem = elem;
  if (p.sh == 1 && p.sw == 1 && p.kh * p.kw >= 2 && icg % step == 0) {
    t.pc = icg, t.kh = p.kh, t.kw = p.kw, t.tx = 1, t.s2d = false;
  } else if (p.sh == 2 && p.sw == 2 && icg <= 4 && p.kh >= 2 && p.kw >= 2) {
    t.pc = 16, t.tx = step / 16, t.kh = (p.kh + 1) / 2, t.kw = ((p.kw + 1) / 2 + t.tx - 1) / t.tx * t.tx;
    t.s2d = true;
  } else {
    return false;
  }
  t.hp = p.oh + t.kh - 1, t.wp = p.ow + t.kw - 1;
  t.grid = long(p.n) * t.hp * t.wp;
  t.pixels = (t.grid + kTileRows - 1) / kTileRows * kTileRows + (t.kh - 1) * t.wp + t.kw - 1;
  if (double(t.hp) * t.wp > kShiftedWaste * p.oh * p.ow) return false;
  if (s) *s = t;
  return true;
}

inline std::size_t shifted_workspace_bytes(const ConvParams& p, int elem) {
  Shifted s;
  return shifted(p, elem, &s) ? std::size_t(s.pixels) * s.pc * elem : 0;
}

// A space-to-depth stem as the stride-1 conv it runs: 16 input channels, the folded taps.
inline ConvParams s2d_params(const ConvParams& p, const Shifted& s) {
  ConvParams q = p;
  q.ic = s.pc, q.kh = s.kh, q.kw = s.kw, q.sh = q.sw = 1;
  return q;
}

// OIHW weights to the stride-1 form's: input channel (sy * 2 + sx) * 4 + c of tap (ky, kx) is
// the original's channel c at (2 ky + sy, 2 kx + sx); zero past the window or the channels.
template <class W>
std::vector<W> s2d_weights(const ConvParams& p, const Shifted& s, const W* w) {
  std::vector<W> f(std::size_t(p.oc) * 16 * s.kh * s.kw, W(0));
  for (int o = 0; o < p.oc; ++o)
    for (int c = 0; c < p.ic; ++c)
      for (int ky = 0; ky < p.kh; ++ky)
        for (int kx = 0; kx < p.kw; ++kx) {
          const int ch = ((ky % 2) * 2 + kx % 2) * 4 + c;
          f[((std::size_t(o) * 16 + ch) * s.kh + ky / 2) * s.kw + kx / 2] =
              w[((std::size_t(o) * p.ic + c) * p.kh + ky) * p.kw + kx];
        }
  return f;
}

// The padded image (E: uint8_t or uint16_t), one task per padded row and one for the pixels
// past the last image: padpix (pc values; null: zeros) outside the source, and
// put(source element, destination, count) converting runs of the source (pixel stride ss
// elements) inside it.
template <class E, class Put>
void fill_padded(const ConvParams& p, const Shifted& s, long ss, const E* padpix, E* img, pthreadpool_t pool,
                 Put&& put) {
  const long pc = s.pc, row = s.wp * pc, rows = long(p.n) * s.hp;
  auto pad = [&](E* d, long count) {  // count padded pixels
    if (!padpix) std::memset(d, 0, std::size_t(count * pc) * sizeof(E));
    else
      for (long i = 0; i < count; ++i) std::memcpy(d + i * pc, padpix, std::size_t(pc) * sizeof(E));
  };
  auto task = [&](std::size_t r) {
    E* d = img + long(r) * row;
    if (long(r) == rows) return pad(d, s.pixels - s.grid);
    const long n = long(r) / s.hp;
    if (s.s2d) {
      // Each source row's pixels in runs of 64, each pixel's channels into its 4-value slot.
      pad(d, s.wp);
      const long y2 = long(r) % s.hp;
      const int c0 = std::max(0, -p.pad_l), c1 = int(std::min<long>(p.iw, 2 * s.wp - p.pad_l));
      alignas(64) E h[64 * 4];
      for (int sy = 0; sy < 2; ++sy) {
        const long iy = 2 * y2 + sy - p.pad_t;
        if (iy < 0 || iy >= p.ih) continue;
        for (int i0 = c0; i0 < c1; i0 += 64) {
          const int cnt = std::min(64, c1 - i0);
          const long at = ((n * p.ih + iy) * p.iw + i0) * ss;
          if (ss == p.ic) put(at, h, cnt * p.ic);
          else
            for (int i = 0; i < cnt; ++i) put(at + i * ss, h + i * p.ic, p.ic);
          for (int i = 0; i < cnt; ++i) {
            const long px = i0 + i + p.pad_l;  // the padded column
            std::memcpy(d + (px >> 1) * 16 + (sy * 2 + (px & 1)) * 4, h + i * p.ic, std::size_t(p.ic) * sizeof(E));
          }
        }
      }
      return;
    }
    // The source pixels of a padded row: those inside both the image and the padded width.
    const long iy = long(r) % s.hp - p.pad_t;
    const int x0 = std::max(0, p.pad_l), c0 = std::max(0, -p.pad_l);  // padded column, source column
    const int w = std::max(0, std::min<int>(p.iw - c0, int(s.wp) - x0));
    if (iy < 0 || iy >= p.ih || w == 0) return pad(d, s.wp);
    pad(d, x0);
    const long at = ((n * p.ih + iy) * p.iw + c0) * ss;
    if (ss == pc) put(at, d + x0 * pc, int(w * pc));
    else
      for (int i = 0; i < w; ++i) put(at + i * ss, d + (x0 + i) * pc, int(pc));
    pad(d + (x0 + w) * pc, s.wp - x0 - w);
  };
  pthreadpool_parallelize_1d(pool, task, std::size_t(rows + 1), kPoolFlags);
}

// The task grid: blocks of bt tiles times groups of pp panel pairs, about 4 tasks a thread,
// splitting the pairs only where the tiles are few.
struct ShiftedGrid {
  long tiles, pairs, pp, pgroups, bt, mblocks;
};
inline ShiftedGrid shifted_grid(const Shifted& s, long panels, pthreadpool_t pool) {
  ShiftedGrid g;
  auto ceil_div = [](long a, long b) { return (a + b - 1) / b; };
  const long threads = std::max<long>(1, long(pthreadpool_get_threads_count(pool)));
  const long want = threads > 1 ? 4 * threads : 1;
  g.tiles = ceil_div(s.grid, kTileRows);
  g.pairs = ceil_div(panels, 2);
  g.pgroups = std::min(g.pairs, ceil_div(want, g.tiles));
  g.pp = ceil_div(g.pairs, g.pgroups);
  g.pgroups = ceil_div(g.pairs, g.pp);
  g.bt = std::max<long>(1, std::min<long>(16, g.tiles / ceil_div(want, g.pgroups)));
  g.mblocks = ceil_div(g.tiles, g.bt);
  return g;
}

// The rows of the tile at grid output q that are outputs, as runs of consecutive output
// pixels (row in the tile, output pixel, count); returns how many.
struct GridRun {
  int r;
  long m;
  int len;
};
inline int grid_runs(const ConvParams& p, const Shifted& s, long q, GridRun* runs) {
  const long plane = s.hp * s.wp;
  int k = 0;
  for (int r = 0; r < kTileRows;) {
    const long g = q + r, n = g / plane, y = (g % plane) / s.wp, x = g % s.wp;
    if (n >= p.n || y >= p.oh || x >= p.ow) {
      ++r;
      continue;
    }
    const int len = int(std::min<long>(kTileRows - r, p.ow - x));
    runs[k++] = {r, (n * p.oh + y) * p.ow + x, len};
    r += len;
  }
  return k;
}

// sums += the tile at grid output q over every tap, its A tiles in place in img, w the panel
// (K elements of NR channels x elem bytes, in the stride-1 form's (ky, kx, channel) order).
template <class T>
inline void sweep_taps(const uint8_t* img, const Shifted& s, long q, const uint8_t* w) {
  const long pixel = long(s.pc) * s.elem, kbytes = s.tx * pixel;
  for (int ky = 0; ky < s.kh; ++ky)
    for (int kx = 0; kx < s.kw; kx += s.tx, w += kbytes * 32)
      sweep<T>(img + (q + ky * s.wp + kx) * pixel, pixel, w, kbytes);
}

// The shifted tiles' tasks (blocks of tiles x groups of panel pairs): per tile, per pair of
// 32-channel panels, the sums start from `bias` (4-byte values: float or int32, loaded into the
// tiles as they are) where bias_in(ch0, nvalid, panels) says the pair takes
// it, or from zero; they sweep every tap, and go to c (4-byte sums, 64 channels a row); then
// epilogue(c, runs, nruns, ch0, nvalid, pair, bias_in) writes the tile's output rows, and
// after(runs, nruns, ch_lo, ch_hi) follows each tile (the int8 driver's fused table).
template <class T, class BiasIn, class Epilogue, class After>
void shifted_tasks(const ConvParams& p, const Shifted& s, long panels, long ocg, const uint8_t* img,
                   const uint8_t* weights, const void* bias, BiasIn&& bias_in, Epilogue&& epilogue, After&& after,
                   pthreadpool_t pool) {
  constexpr int NR = 32;
  const ShiftedGrid sg = shifted_grid(s, panels, pool);
  const long panel_bytes = long(s.kh) * s.kw * s.pc * s.elem * NR;  // the stride-1 form's window
  auto task = [&](std::size_t mb, std::size_t pg) {
    const long t0 = long(mb) * sg.bt, t1 = std::min(sg.tiles, t0 + sg.bt);
    const long q0 = long(pg) * sg.pp, q1 = std::min(sg.pairs, q0 + sg.pp);
    alignas(64) int32_t c[2 * kTileRows * NR];
    GridRun runs[kTileRows];
    T::config();
    for (long t = t0; t < t1; ++t) {
      const int nruns = grid_runs(p, s, t * kTileRows, runs);
      if (nruns == 0) continue;
      for (long pr = q0; pr < q1; ++pr) {
        const long pn0 = 2 * pr, pn1 = std::min<long>(pn0 + 2, panels);
        const long ch0 = pn0 * NR;
        const int nvalid = int(std::min<long>(pn1 * NR, ocg) - ch0);
        const bool in = bias_in(ch0, nvalid, pn1 - pn0);
        for (long pn = pn0; pn < pn1; ++pn) {
          start<T>(in ? static_cast<const int32_t*>(bias) + ch0 + (pn - pn0) * NR : nullptr, 0);
          sweep_taps<T>(img, s, t * kTileRows, weights + pn * panel_bytes);
          store<T>(c + (pn - pn0) * NR, 2 * NR * 4);
        }
        epilogue(c, runs, nruns, ch0, nvalid, pn1 - pn0 == 2, in);
      }
      after(runs, nruns, q0 * 2 * NR, std::min<long>(q1 * 2 * NR, ocg));
    }
    T::release();
  };
  pthreadpool_parallelize_2d(pool, task, std::size_t(sg.mblocks), std::size_t(sg.pgroups), kPoolFlags);
}

}  // namespace systolic::kernels::amx
