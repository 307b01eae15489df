// Implicit-GEMM NHWC conv driver over a vector traits struct: weight packing into NR-channel
// panels, per-tile row-pointer (indirection) setup, cache blocking and threading.
#pragma once
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "base/threadpool.h"
#include "kernels/conv/conv.h"
#include "kernels/conv/igemm_blocking.h"
#include "kernels/gemm/igemm_microkernel.h"

namespace systolic::kernels::igemm {

// Packed layout: [group][panel][ky][kx][c][NR], channels past ocg zero in the last panel.
template <int NR>
std::size_t packed_floats(const ConvParams& p) {
  const int icg = p.ic / p.groups, ocg = p.oc / p.groups;
  return std::size_t(p.groups) * ceil_div(ocg, NR) * p.kh * p.kw * icg * NR;
}

template <int NR>
void pack(const ConvParams& p, const float* w, float* out) {
  const int icg = p.ic / p.groups, ocg = p.oc / p.groups;
  for (int g = 0; g < p.groups; ++g)
    for (int pn = 0; pn < ceil_div(ocg, NR); ++pn)
      for (int ky = 0; ky < p.kh; ++ky)
        for (int kx = 0; kx < p.kw; ++kx)
          for (int c = 0; c < icg; ++c)
            for (int r = 0; r < NR; ++r) {
              const int k = pn * NR + r;
              *out++ = k < ocg ? w[((std::size_t(g * ocg + k) * icg + c) * p.kh + ky) * p.kw + kx]
                               : 0.f;
            }
}

// The zero row that padded taps point at (one merged kernel row long at least).
inline std::size_t workspace_bytes(const ConvParams& p) {
  return (std::size_t(p.ic / p.groups) * p.kw + 16) * sizeof(float);
}

// Whether run() gathers each tile's merged kernel rows into a packed buffer (short K, one
// group, dense source, no x dilation): the only path that also reads uint8 sources.
inline bool packs_tiles(const ConvParams& p) {
  const int icg = p.ic / p.groups;
  const bool direct = p.kh * p.kw == 1 && p.sh == 1 && p.sw == 1 && p.pad_t == 0 && p.pad_l == 0 &&
                      p.ih == p.oh && p.iw == p.ow;
  const bool dense = !p.src_stride || p.src_stride == p.ic;
  return !direct && p.groups == 1 && dense && p.dw == 1 && p.kw > 1 && p.kw * icg <= kMaxMerge &&
         p.kh * p.kw * icg <= 512;
}

// The run side below is instantiated in ISA files only; internal linkage keeps copies apart.
namespace {

// Everything a tile needs, computed once per run.
struct Ctx {
  ConvParams p;
  ConvArgs a;
  long ss, ds, rs;  // pixel strides
  int icg, ocg, taps, panels_g;
  bool direct;  // 1x1, stride 1, no pad: pixel m of dst reads pixel m of src
  bool merge;   // dense src, one group, no x dilation, short rows: merge kx into c
  int ntaps, tap_len;  // the microkernel's taps and channels per tap (kh, kw*icg when merged)
  bool pack;  // merged rows with a short K: gather each tile's rows once, reuse over all panels
};

// Gathers `rows` pixels' merged kernel rows (zero-padded) into buf[i * K + ky * tap_len + ...],
// from float NHWC or, converting, from a uint8 image (float(u) - offset[c]).
template <class S>
void gather_rows_from(const Ctx& x, const S* src, long m, int rows, float* buf) {
  const ConvParams& p = x.p;
  const int K = x.ntaps * x.tap_len;
  const long hw = long(p.oh) * p.ow;
  const float* off = x.a.src_offset;
  auto load = [&](const S* s, int c) {
    if constexpr (std::is_same_v<S, float>) return *s;
    else return float(*s) - off[c];
  };
  for (int i = 0; i < rows; ++i) {
    const long pix = m + i, img = pix / hw, rem = pix - img * hw;
    const int oy = int(rem / p.ow), ox = int(rem - long(oy) * p.ow);
    const int iy0 = oy * p.sh - p.pad_t, ix0 = ox * p.sw - p.pad_l;
    const S* base = src + img * p.ih * p.iw * x.ss;
    for (int ky = 0; ky < p.kh; ++ky) {
      float* d = buf + i * K + ky * x.tap_len;
      const int iy = iy0 + ky * p.dh;
      if (unsigned(iy) >= unsigned(p.ih)) {
        std::memset(d, 0, x.tap_len * sizeof(float));
      } else if (std::is_same_v<S, float> && ix0 >= 0 && ix0 + p.kw <= p.iw) {
        std::memcpy(d, base + (long(iy) * p.iw + ix0) * x.ss, x.tap_len * sizeof(float));
      } else {
        const S* row = base + long(iy) * p.iw * x.ss;
        for (int kx = 0; kx < p.kw; ++kx) {
          const int ix = ix0 + kx;
          for (int c = 0; c < x.icg; ++c)
            d[kx * x.icg + c] = unsigned(ix) < unsigned(p.iw) ? load(row + long(ix) * x.ss + c, c) : 0.f;
        }
      }
    }
  }
}

inline void gather_rows(const Ctx& x, long m, int rows, float* buf) {
  if (x.p.src_u8) gather_rows_from(x, x.a.src_u8, m, rows, buf);
  else gather_rows_from(x, x.a.src, m, rows, buf);
}

// A block of K: taps [t0, t0+nt), channels [c0, c0+kc) of each; contiguous in the packed panel.
struct KBlock {
  int t0, nt, c0, kc;
};

// A K block's place in the packed panel.
inline KBlock k_block(const KSplit& s, const Ctx& x, int b) {
  if (s.chunks == 1) {
    const int t0 = b * s.taps_per;
    return {t0, std::min(s.taps_per, x.ntaps - t0), 0, x.tap_len};
  }
  const int c0 = (b % s.chunks) * s.chunk;
  return {b / s.chunks, 1, c0, std::min(s.chunk, x.tap_len - c0)};
}

// Runs one tile over one K block; w is the panel's start.
template <class T, int R, int NV>
void tile(const Ctx& x, long m, int g, const float* w, const TileOut& o, const KBlock& kb) {
  constexpr int NR = NV * T::W;
  const ConvParams& p = x.p;
  const float* src = x.a.src + g * x.icg + kb.c0;
  w += (long(kb.t0) * x.tap_len + kb.c0) * NR;
  if (x.direct) {
    igemm_tile<T, R, NV>(1, kb.kc, w, [&](int, const float** r) {
      for (int i = 0; i < R; ++i) r[i] = src + (m + i) * x.ss;
    }, o);
    return;
  }
  const float* zero = x.a.workspace;
  const float* base[R];
  int iy0[R], ix0[R];
  // Divides once per tile, then steps pixel by pixel: two divisions per row were ~10% of a
  // short-K call (strided 1x1, K=256).
  const long hw = long(p.oh) * p.ow;
  long img = m / hw;
  int oy = int((m - img * hw) / p.ow), ox = int(m - img * hw - long(oy) * p.ow);
  for (int i = 0; i < R; ++i) {
    iy0[i] = oy * p.sh - p.pad_t;
    ix0[i] = ox * p.sw - p.pad_l;
    base[i] = src + img * p.ih * p.iw * x.ss;
    if (++ox == p.ow) ox = 0, oy = oy + 1 == p.oh ? (++img, 0) : oy + 1;
  }
  if (x.merge) {  // a kernel row is kw*icg contiguous floats: one long tap per ky
    float buf[R][kMaxMerge];  // rows that cross the left/right edge, zero-padded
    int ky = kb.t0;
    igemm_tile<T, R, NV>(kb.nt, kb.kc, w, [&](int, const float** r) {
      const int dy = ky++ * p.dh;
      for (int i = 0; i < R; ++i) {
        const int iy = iy0[i] + dy;
        if (unsigned(iy) >= unsigned(p.ih)) {
          r[i] = zero;
        } else if (ix0[i] >= 0 && ix0[i] + p.kw <= p.iw) {
          r[i] = base[i] + (long(iy) * p.iw + ix0[i]) * x.ss;
        } else {
          const float* row = base[i] + long(iy) * p.iw * x.ss;
          for (int kx = 0; kx < p.kw; ++kx) {
            const int ix = ix0[i] + kx;
            for (int c = 0; c < x.icg; ++c)
              buf[i][kx * x.icg + c] = unsigned(ix) < unsigned(p.iw) ? row[long(ix) * x.ss + c] : 0.f;
          }
          r[i] = buf[i];
        }
      }
    }, o);
    return;
  }
  // A tap that reads only padding for every pixel of the tile is skipped: a 3x3 conv dilated by
  // 12 on a 14x14 map (DeepLabV3's ASPP) reads the image through its off-centre taps for a
  // fifth of its pixels only.
  int ky = kb.t0 / p.kw, kx = kb.t0 % p.kw;
  igemm_tile<T, R, NV>(kb.nt, kb.kc, w, [&](int, const float** r) {
    const int dy = ky * p.dh, dx = kx * p.dw;
    bool any = false;
    for (int i = 0; i < R; ++i) {
      const int iy = iy0[i] + dy, ix = ix0[i] + dx;
      const bool in = unsigned(iy) < unsigned(p.ih) && unsigned(ix) < unsigned(p.iw);
      r[i] = in ? base[i] + (long(iy) * p.iw + ix) * x.ss : zero;
      any |= in;
    }
    if (++kx == p.kw) kx = 0, ++ky;
    return any;
  }, o);
}

// Picks the R = rows instantiation (R = 1..MR) at run time.
template <class T, int R, int NV>
void tile_rows(int rows, const Ctx& x, long m, int g, const float* w, const TileOut& o,
               const KBlock& kb) {
  if constexpr (R > 1)
    if (rows < R) return tile_rows<T, R - 1, NV>(rows, x, m, g, w, o, kb);
  tile<T, R, NV>(x, m, g, w, o, kb);
}

template <class T, int MR, int NV>
void run(const ConvParams& p, const ConvArgs& a, pthreadpool_t pool, const Blocking& bl) {
  constexpr int NR = NV * T::W;
  Ctx x{p, a, p.src_stride ? p.src_stride : p.ic, p.dst_stride ? p.dst_stride : p.oc,
        p.res_stride ? p.res_stride : p.oc, p.ic / p.groups, p.oc / p.groups, p.kh * p.kw, 0,
        false, false, 0, 0, false};
  x.panels_g = ceil_div(x.ocg, NR);
  x.direct = x.taps == 1 && p.sh == 1 && p.sw == 1 && p.pad_t == 0 && p.pad_l == 0 &&
             p.ih == p.oh && p.iw == p.ow;
  x.merge = !x.direct && p.groups == 1 && x.ss == p.ic && p.dw == 1 && p.kw > 1 &&
            p.kw * x.icg <= kMaxMerge;
  x.ntaps = x.merge ? p.kh : x.taps;
  x.tap_len = x.merge ? p.kw * x.icg : x.icg;
  const long M = long(p.n) * p.oh * p.ow;
  const long K = long(x.taps) * x.icg;
  const int panels = p.groups * x.panels_g;
  x.pack = packs_tiles(p) && packs_over(panels, p.src_u8);  // merged short K, several panels
  std::memset(a.workspace, 0, std::size_t(x.icg) * p.kw * sizeof(float));
  const TaskGrid tg = task_grid(M, K, x.icg, panels, MR, NR, long(pthreadpool_get_threads_count(pool)), x.pack, bl);
  const long mc = tg.mc, mblocks = tg.mblocks, pb = tg.pb;
  const bool pixel_outer = tg.pixel_outer;
  // Partial sums live in dst, so a residual that overlaps dst (in place) forbids a K split.
  const bool res_apart = !a.residual || a.residual + M * x.rs <= a.dst || a.dst + M * x.ds <= a.residual;
  const KSplit ks = k_split(x.ntaps, x.tap_len, NR, bl.l1_weights,
                             splits_k(x.taps, ceil_div(mc, MR)) && res_apart);
  const KBlock whole{0, x.ntaps, 0, x.tap_len};
  auto task = [&](std::size_t mb, std::size_t p0, std::size_t pc) {
    const long m0 = long(mb) * mc, m1 = std::min(M, m0 + mc), len = m1 - m0;
    const long nt = ceil_div(len, MR);  // tiles of equal size (+-1 row)
    auto one = [&](std::size_t pp, long t, const KBlock& kb, bool accumulate, bool partial,
                   const char* pf = nullptr, const char* pf_end = nullptr) {
      const long m = m0 + t * len / nt, rows = m0 + (t + 1) * len / nt - m;
      const int g = int(pp) / x.panels_g, n0 = (int(pp) % x.panels_g) * NR;
      const long ch = long(g) * x.ocg + n0;
      const TileOut o{a.dst + m * x.ds + ch, x.ds,
                a.residual ? a.residual + m * x.rs + ch : nullptr, x.rs,
                a.bias ? a.bias + ch : nullptr, std::min(NR, x.ocg - n0), a.epilogue,
                accumulate, partial, pf, pf_end};
      tile_rows<T, MR, NV>(int(rows), x, m, g, a.weights + pp * K * NR, o, kb);
    };
    if (x.pack) {  // gather the tile's rows once, then run them like a 1x1 conv per panel
      float buf[MR * kMaxPackK];
      Ctx xp = x;
      xp.direct = true, xp.a.src = buf, xp.ss = K, xp.icg = int(K);
      const KBlock pk{0, 1, 0, int(K)};
      for (long t = 0; t < nt; ++t) {
        const long m = m0 + t * len / nt, rows = m0 + (t + 1) * len / nt - m;
        gather_rows(x, m, int(rows), buf);
        for (std::size_t pp = p0; pp < p0 + pc; ++pp) {
          const int n0 = int(pp) * NR;
          const TileOut o{a.dst + m * x.ds + n0, x.ds, a.residual ? a.residual + m * x.rs + n0 : nullptr,
                          x.rs, a.bias ? a.bias + n0 : nullptr, std::min(NR, x.ocg - n0), a.epilogue};
          tile_rows<T, MR, NV>(int(rows), xp, 0, 0, a.weights + pp * K * NR, o, pk);
        }
      }
    } else if (ks.blocks > 1) {  // a panel's K block stays in L1 while the M block streams past
      for (std::size_t pp = p0; pp < p0 + pc; ++pp)
        for (int b = 0; b < ks.blocks; ++b) {
          const KBlock kb = k_block(ks, x, b);
          // The next block's weights, fetched into L2 a slice per tile: without it the first
          // tile of each block waits for memory. After a task's last block, the next panel's
          // first: a thread's next task is usually the next panel group (pthreadpool runs each
          // thread's range in order).
          const bool more = b + 1 < ks.blocks || pp + 1 < std::size_t(panels);
          const KBlock nb = k_block(ks, x, b + 1 < ks.blocks ? b + 1 : 0);
          const char* nw = reinterpret_cast<const char*>(
              a.weights + (b + 1 < ks.blocks ? pp : pp + 1) * K * NR + (long(nb.t0) * x.tap_len + nb.c0) * NR);
          const long nbytes = more ? long(nb.nt) * nb.kc * NR * 4 : 0;
          for (long t = 0; t < nt; ++t)
            one(pp, t, kb, b > 0, b + 1 < ks.blocks, nw + nbytes * t / nt / 64 * 64, nw + nbytes * (t + 1) / nt);
        }
    } else if (pixel_outer) {  // the MR input rows stay in L1 while the (L2-resident) panels sweep
      for (long t = 0; t < nt; ++t)
        for (std::size_t pp = p0; pp < p0 + pc; ++pp) one(pp, t, whole, false, false);
    } else {  // one panel stays in L1/L2 while the pixels stream past it
      for (std::size_t pp = p0; pp < p0 + pc; ++pp) {  // and the next panel comes into L2
        const bool more = pp + 1 < std::size_t(panels);
        const char* nw = reinterpret_cast<const char*>(a.weights + (pp + 1) * K * NR);
        const long nbytes = more ? K * NR * 4 : 0;
        for (long t = 0; t < nt; ++t)
          one(pp, t, whole, false, false, nw + nbytes * t / nt / 64 * 64, nw + nbytes * (t + 1) / nt);
      }
    }
  };
  pthreadpool_parallelize_2d_tile_1d(pool, task, std::size_t(mblocks), std::size_t(panels),
                                     std::size_t(pb), kPoolFlags);
}

}  // namespace
}  // namespace systolic::kernels::igemm
