// bf16 implicit-GEMM NHWC conv driver over a bf16 dot-product traits struct (BVecAvx512Bf16, and
// an AVX2 emulation in the tests): K2 weight packing, per-tile gathering of the pixels' kernel
// windows rounded to bf16 K pairs, K chunking with fp32 partial sums, threading, and the fp32
// family's fused epilogue (bias, residual, activation, bf16 rounding: igemm store_tile).
//
// T provides the fp32 vector ops of store_tile (VecAvx2 / VecAvx512) and: A, B (uint16_t bf16),
// KG = 2, bcast (one K pair of A to every lane), loadb (a W-column row of K pairs), dot
// (acc + a.hi * b.hi + a.lo * b.lo per lane: vdpbf16ps), to_bf16 (n floats rounded to bf16).
#pragma once
#include <algorithm>
#include <cstring>

#include "base/threadpool.h"
#include "kernels/bconv/bconv.h"
#include "kernels/gemm/block_grid.h"
#include "kernels/gemm/igemm_microkernel.h"

namespace systolic::kernels::bigemm {

constexpr long ceil_div(long a, long b) { return (a + b - 1) / b; }

// Blocking, GotoBLAS-style (as kernels/qconv): a task gathers an M block of pixels' windows (one
// K chunk at a time) into a stack buffer of at most kBlockBytes that stays in L2, then sweeps its
// weight panels over it: a panel's K chunk (at most kL1WeightBytes) stays in L1 while the
// block's tiles pass. With several chunks, partial sums wait in a stack buffer.
constexpr long kBlockBytes = 48 * 1024;
constexpr long kMaxBlockTiles = 16;
constexpr long kL1WeightBytes = 16 * 1024;
constexpr long kMaxPartialBytes = 48 * 1024;

// K2 layout: [group][panel][Kp/2][NR][2] bf16, in 4-byte words.
template <int NR>
std::size_t packed_floats(const ConvParams& p) {
  const long icg = p.ic / p.groups, ocg = p.oc / p.groups, K = long(p.kh) * p.kw * icg;
  return std::size_t(p.groups) * ceil_div(ocg, NR) * ceil_div(K, 2) * NR;
}

template <int NR>
void pack(const ConvParams& p, const float* w, float* packed) {
  const int icg = p.ic / p.groups, ocg = p.oc / p.groups, taps = p.kh * p.kw;
  const long K = long(taps) * icg, Kp = ceil_div(K, 2) * 2;
  uint16_t* out = reinterpret_cast<uint16_t*>(packed);
  for (int g = 0; g < p.groups; ++g)
    for (int pn = 0; pn < ceil_div(ocg, NR); ++pn)
      for (long k0 = 0; k0 < Kp; k0 += 2)
        for (int r = 0; r < NR; ++r)
          for (int e = 0; e < 2; ++e) {
            const long k = k0 + e;
            const int oc = pn * NR + r, t = int(k / icg), c = int(k % icg);
            *out++ = oc < ocg && k < K ? bf16_bits(w[(long(g * ocg + oc) * icg + c) * taps + t]) : uint16_t(0);
          }
}

inline std::size_t workspace_bytes(const ConvParams&) { return 0; }

// The run side below is instantiated in ISA files only; internal linkage keeps copies apart.
namespace {

struct Ctx {
  ConvParams p;
  ConvArgs a;
  long ss, ds, rs;  // pixel strides (floats)
  int icg, ocg, panels_g;
  long K, Kp;       // window length, rounded up to even
  long kc;          // K chunk (even)
};

// n bf16 values: the traits' inline copy where they have one (against a libc call per kernel row,
// a 3x3 64->64 conv at batch 16 ran 2.88 -> 2.74 ms on AMX), else memcpy.
template <class T>
SYSTOLIC_INLINE void copy16(const uint16_t* s, uint16_t* d, int n) {
  if constexpr (requires { T::copy16(s, d, n); }) T::copy16(s, d, n);
  else std::memcpy(d, s, std::size_t(n) * 2);
}

// gather() of whole windows (one K chunk) from a dense source without x dilation: per pixel and
// kernel row, the taps inside the image are one run, the rest zeros, without the general loop's
// per-run bookkeeping (the 3-channel 7x7 stem on AMX: 552 -> 535 us a batch-1 image on a float
// source, 453 -> 405 on a bf16 one).
template <class T>
void gather_window(const Ctx& x, long m, int rows, int g, long k1, uint16_t* buf, long ld) {
  const ConvParams& p = x.p;
  const int icg = x.icg, row = p.kw * icg;
  const auto* src16 = reinterpret_cast<const uint16_t*>(x.a.src);
  const bool stored = p.bf16_io & kBf16Src;
  const long hw = long(p.oh) * p.ow;
  long img = m / hw;
  int oy = int((m - img * hw) / p.ow), ox = int(m - img * hw - long(oy) * p.ow);
  for (int i = 0; i < rows; ++i) {
    const int iy0 = oy * p.sh - p.pad_t, ix0 = ox * p.sw - p.pad_l;
    const long base = img * p.ih * p.iw * x.ss + g * icg;
    const int lo = std::clamp(-ix0, 0, p.kw), hi = std::clamp(p.iw - ix0, lo, p.kw);  // taps in the image
    uint16_t* d = buf + i * ld;
    for (int ky = 0; ky < p.kh; ++ky, d += row) {
      const int iy = iy0 + ky * p.dh;
      if (unsigned(iy) >= unsigned(p.ih) || lo == hi) {
        std::memset(d, 0, sizeof(uint16_t) * row);
        continue;
      }
      if (lo > 0) std::memset(d, 0, sizeof(uint16_t) * lo * icg);
      const long at = base + (long(iy) * p.iw + ix0 + lo) * x.ss;
      if (stored) copy16<T>(src16 + at, d + lo * icg, (hi - lo) * icg);
      else T::to_bf16(x.a.src + at, d + lo * icg, (hi - lo) * icg);
      if (hi < p.kw) std::memset(d + hi * icg, 0, sizeof(uint16_t) * (p.kw - hi) * icg);
    }
    for (long k = x.K; k < k1; ++k) buf[i * ld + k] = 0;
    if (++ox == p.ow) ox = 0, oy = oy + 1 == p.oh ? (++img, 0) : oy + 1;
  }
}

// Gathers window elements [k0, k1) of `rows` pixels from m on (conv group g) into
// buf[i * ld + (k - k0)] as bf16 (copied where the source is stored as bf16: kBf16Src);
// out-of-image taps and elements past K are 0.
template <class T>
void gather(const Ctx& x, long m, int rows, int g, long k0, long k1, uint16_t* buf, long ld) {
  const ConvParams& p = x.p;
  if (x.ss == x.icg && p.dw == 1 && k0 == 0 && k1 >= x.K) return gather_window<T>(x, m, rows, g, k1, buf, ld);
  const long kend = std::min(k1, x.K);
  const int t0 = int(k0 / x.icg), c0 = int(k0 - long(t0) * x.icg);
  const int ky0 = t0 / p.kw, kx0 = t0 - ky0 * p.kw;
  // A run of taps along x is contiguous in a dense source without x dilation.
  const bool runs = x.ss == x.icg && p.dw == 1;
  const long hw = long(p.oh) * p.ow;
  long img = m / hw;
  int oy = int((m - img * hw) / p.ow), ox = int(m - img * hw - long(oy) * p.ow);
  for (int i = 0; i < rows; ++i) {
    const int iy0 = oy * p.sh - p.pad_t, ix0 = ox * p.sw - p.pad_l;
    const long base = img * p.ih * p.iw * x.ss + g * x.icg;  // elements from the source's start
    uint16_t* d = buf + i * ld;
    long k = k0;
    int c = c0, ky = ky0, kx = kx0;
    while (k < kend) {
      const int iy = iy0 + ky * p.dh, ix = ix0 + kx * p.dw;
      const bool in = unsigned(iy) < unsigned(p.ih) && unsigned(ix) < unsigned(p.iw);
      int taps = 1;
      if (in && runs && c == 0) taps = std::min(p.kw - kx, p.iw - ix);  // whole taps to the row's or image's end
      const int span = taps * x.icg - c;
      const int n = int(std::min<long>(span, kend - k));
      const long at = base + (long(iy) * p.iw + ix) * x.ss + c;
      if (!in) std::memset(d + (k - k0), 0, n * sizeof(uint16_t));
      else if (p.bf16_io & kBf16Src) copy16<T>(reinterpret_cast<const uint16_t*>(x.a.src) + at, d + (k - k0), n);
      else T::to_bf16(x.a.src + at, d + (k - k0), n);
      k += n;
      if (n < span) break;  // the chunk ends inside a tap
      c = 0;
      kx += taps;
      if (kx >= p.kw) kx = 0, ++ky;
    }
    for (; k < k1; ++k) d[k - k0] = 0;
    if (++ox == p.ow) ox = 0, oy = oy + 1 == p.oh ? (++img, 0) : oy + 1;
  }
}

// acc[MR][NV] += sum over K pairs kp < np of rows a[i] x the panel w.
template <class T, int MR, int NV>
SYSTOLIC_INLINE void dot_tile(long np, const uint16_t* const* a, const uint16_t* w, typename T::V (&acc)[MR][NV]) {
  using V = typename T::V;
  constexpr int W = T::W;
  for (long k = 0; k < np; ++k) {
    V b[NV];
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) b[j] = T::loadb(w + j * W * 2);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const V av = T::bcast(a[i] + k * 2);
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) acc[i][j] = T::dot(acc[i][j], av, b[j]);
    }
    w += NV * W * 2;
  }
}

// One tile (R rows) against one panel over one K chunk; `part` holds the partial sums between
// chunks (first: start from zero; last: run the epilogue instead of saving).
template <class T, int R, int NV>
void tile(const uint16_t* const* rows, long np, const uint16_t* w, float* part, bool first, bool last,
          const TileOut& o) {
  constexpr int W = T::W;
  typename T::V acc[R][NV];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
    for (int j = 0; j < NV; ++j) acc[i][j] = first ? T::zero() : T::load(part + (i * NV + j) * W);
  dot_tile<T, R, NV>(np, rows, w, acc);
  if (last) {
    store_tile<T, R, NV>(acc, o);
  } else {
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i)
#pragma GCC unroll 8
      for (int j = 0; j < NV; ++j) T::store(part + (i * NV + j) * W, acc[i][j]);
  }
}

// Picks the R = rows instantiation (R = 1..MR) at run time.
template <class T, int R, int NV>
void tile_rows(int rows, const uint16_t* const* a, long np, const uint16_t* w, float* part, bool first, bool last,
               const TileOut& o) {
  if constexpr (R > 1)
    if (rows < R) return tile_rows<T, R - 1, NV>(rows, a, np, w, part, first, last, o);
  tile<T, R, NV>(a, np, w, part, first, last, o);
}

template <class T, int MR, int NV>
void run(const ConvParams& p, const ConvArgs& a, pthreadpool_t pool) {
  constexpr int NR = NV * T::W;
  Ctx x;
  x.p = p;
  x.a = a;
  x.ss = p.src_stride ? p.src_stride : p.ic;
  x.ds = p.dst_stride ? p.dst_stride : p.oc;
  x.rs = p.res_stride ? p.res_stride : p.oc;
  x.icg = p.ic / p.groups;
  x.ocg = p.oc / p.groups;
  x.panels_g = int(ceil_div(x.ocg, NR));
  x.K = long(p.kh) * p.kw * x.icg;
  x.Kp = ceil_div(x.K, 2) * 2;
  const long M = long(p.n) * p.oh * p.ow;
  const long tiles = ceil_div(M, MR);
  // 32 KB: 128 bf16 pairs a chunk at NR = 64, where 16 KB left most convs several chunks.
  const long l1_weights = weight_chunk_bytes(kL1WeightBytes, p.kh * p.kw > 1, a.residual != nullptr);
  const BlockGrid bg = block_grid(x.Kp, 2, 2, MR, NR, tiles, x.panels_g, p.groups,
                                  std::max<long>(1, long(pthreadpool_get_threads_count(pool))), MR * NR * 4,
                                  {kBlockBytes, kMaxBlockTiles, l1_weights, kMaxPartialBytes});
  x.kc = bg.kc;
  const long chunks = bg.chunks, bt = bg.bt, mblocks = bg.mblocks, pb = bg.pb, pgroups = bg.pgroups;
  auto task = [&](std::size_t mb, std::size_t gp) {
    const int g = int(gp / pgroups);
    const long p0 = long(gp % pgroups) * pb, p1 = std::min<long>(x.panels_g, p0 + pb);
    const long t0 = long(mb) * bt, t1 = std::min(tiles, t0 + bt);
    if (p0 >= p1 || t0 >= t1) return;
    const long m0 = t0 * MR, rows = std::min(M, t1 * MR) - m0;
    alignas(64) uint16_t buf[kBlockBytes / 2 + 64];
    alignas(64) float part[kMaxPartialBytes / 4];
    const uint16_t* wg = reinterpret_cast<const uint16_t*>(a.weights) + long(g) * x.panels_g * x.Kp * NR;
    for (long c = 0; c < chunks; ++c) {
      const long k0 = c * x.kc, k1 = std::min(x.Kp, k0 + x.kc);
      gather<T>(x, m0, int(rows), g, k0, k1, buf, x.kc);
      for (long pn = p0; pn < p1; ++pn) {
        const uint16_t* w = wg + pn * x.Kp * NR + k0 * NR;
        const long ch = long(g) * x.ocg + pn * NR;
        const int nvalid = int(std::min<long>(NR, x.ocg - pn * NR));
        for (long t = t0; t < t1; ++t) {
          const long m = t * MR;
          const int r = int(std::min<long>(MR, M - m));
          const uint16_t* rp[MR];
          for (int i = 0; i < MR; ++i) rp[i] = buf + (m - m0 + std::min(i, r - 1)) * x.kc;
          const TileOut o{a.dst + m * x.ds + ch, x.ds, a.residual ? a.residual + m * x.rs + ch : nullptr, x.rs,
                          a.bias ? a.bias + ch : nullptr, nvalid, a.epilogue};
          tile_rows<T, MR, NV>(r, rp, (k1 - k0) / 2, w, chunks > 1 ? part + ((pn - p0) * bt + (t - t0)) * MR * NR : part, c == 0,
                               c + 1 == chunks, o);
        }
      }
    }
  };
  pthreadpool_parallelize_2d(pool, task, std::size_t(mblocks), std::size_t(p.groups * pgroups), kPoolFlags);
}

}  // namespace
}  // namespace systolic::kernels::bigemm
