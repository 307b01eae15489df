// Depthwise NHWC conv (groups == ic == oc) over a vector traits struct: channel vectors,
// any kernel size/stride/dilation/pads, fused epilogue. Weights packed [ky][kx][c padded].
//
// Work is split into tasks of (image, output row, channel block). Within a task, 3x3 and 5x5
// kernels with stride 1 or 2 and no dilation take a fast path: per channel vector the KHxKW
// weight vectors stay in registers while OX horizontally adjacent outputs are computed at once,
// sharing each input column load between the outputs that use it; pixels whose taps leave the
// image horizontally go through the generic per-pixel path (`block`), rows cut by the top or
// bottom pad just skip the missing tap rows. Bias, residual, activation (every kind act_vec
// takes: MobileNetV3's HardSwish too, which a call per vector after the store cost as much as
// the taps) and the bf16 rounding are applied in registers before the single store.
#pragma once
#include <algorithm>
#include <cmath>

#include "base/threadpool.h"
#include "kernels/conv/conv.h"
#include "kernels/conv/dw_layout.h"
#include "kernels/gemm/igemm_microkernel.h"

namespace systolic::kernels::dw {

namespace {

// First and one-past-last tap index k with 0 <= base + k*d < size, clamped to [0, taps).
inline void tap_range(int base, int d, int size, int taps, int* lo, int* hi) {
  int l = base >= 0 ? 0 : (-base + d - 1) / d;
  int h = size - base <= 0 ? 0 : (size - base + d - 1) / d;
  *lo = std::min(l, taps);
  *hi = std::max(*lo, std::min(h, taps));
}

// NB vectors of channels [c, c + NB*W) (the last one may hold only `tail` lanes) of one pixel.
template <class T, int NB>
SYSTOLIC_INLINE void block(const ConvParams& p, const ConvArgs& a, long s0, long ss,
                           const float* w0, int cp, int c, int tail, int ky0, int ky1, int kx0,
                           int kx1, float* d, const float* r) {
  using V = typename T::V;
  constexpr int W = T::W;
  auto ld = [&](const float* q, int v) {
    return v == NB - 1 && tail < W ? T::load_n(q + v * W, tail) : T::load(q + v * W);
  };
  V acc[NB];
  for (int v = 0; v < NB; ++v) acc[v] = a.bias ? ld(a.bias + c, v) : T::zero();
  for (int ky = ky0; ky < ky1; ++ky) {
    const long srow = s0 + long(ky) * p.dh * p.iw * ss + c;
    const float* wrow = w0 + long(ky) * p.kw * cp + c;
    for (int kx = kx0; kx < kx1; ++kx) {
      const float* s = a.src + (srow + long(kx) * p.dw * ss);
      const float* w = wrow + long(kx) * cp;
#pragma GCC unroll 4
      for (int v = 0; v < NB; ++v) acc[v] = T::fma(ld(s, v), T::load(w + v * W), acc[v]);
    }
  }
  const bool vec_act = act_vectorized(a.epilogue.act), vec_round = vec_act && a.epilogue.round_bf16;
  const V va = T::set1(a.epilogue.a), vb = T::set1(a.epilogue.b);
#pragma GCC unroll 4
  for (int v = 0; v < NB; ++v) {
    V x = acc[v];
    if (r) x = T::add(x, ld(r + c, v));
    if (vec_act) x = act_vec<T>(x, a.epilogue.act, va, vb);
    if (vec_round) x = T::round_bf16(x);
    if (v == NB - 1 && tail < W) T::store_n(d + c + v * W, x, tail);
    else T::store(d + c + v * W, x);
  }
  if (!vec_act) apply_act_n(a.epilogue, d + c, (NB - 1) * W + tail);
}

// One output row of one full channel vector; outputs [lo, hi) have every tap column in the image.
struct RowJob {
  const float* src;  // input pixel (row iy0 + ky0, column 0), channel c
  long row, ss;      // floats between input rows / pixels
  const float* w;    // packed weights, channel c
  long cp;
  const float* bias;  // at channel c, or null
  float* dst;         // output pixel 0 of the row, channel c
  long ds;
  const float* res;  // residual pixel 0 of the row, channel c, or null
  long rs;
  int count, lo, hi, ky0, ky1, iw, pad_l;
};

// How a row applies its activation: kStore stores the value as is (no activation, or one that
// row_segment applies after the store), kClamp clips to [lo, hi] (relu, clip), kVec runs act_vec
// (the other vectorized kinds: leaky relu, hard swish, silu). The common clamps stay a
// compile-time path: a switch per vector cost MobileNetV2's ReLU6 depthwise convs 5-8 %.
enum ActMode { kStore, kClamp, kVec };

template <class T>
struct ActConsts {
  Act act;
  typename T::V a, b, lo, hi;
};

template <class T, int MODE>
SYSTOLIC_INLINE void finish(typename T::V x, const float* r, float* d, const ActConsts<T>& k, bool round) {
  if (r) x = T::add(x, T::load(r));
  if (MODE == kClamp) x = T::min(T::max(x, k.lo), k.hi);
  if (MODE == kVec) x = act_vec<T>(x, k.act, k.a, k.b);
  if (round) x = T::round_bf16(x);
  T::store(d, x);
}

// One output whose input column base + kx is read only for the taps inside [0, iw).
template <class T, int KH, int KW, bool FULL, int MODE>
SYSTOLIC_INLINE void edge(const typename T::V (&wv)[KH][KW], const float* s, long row, long ss,
                          int ky0, int ky1, int base, int iw, const float* bias, float* d,
                          const float* r, const ActConsts<T>& k, bool round) {
  typename T::V acc = bias ? T::load(bias) : T::zero();
  int kx0, kx1;
  tap_range(base, 1, iw, KW, &kx0, &kx1);
  for (int ky = 0; ky < KH; ++ky) {
    if (!FULL && (ky < ky0 || ky >= ky1)) continue;
    const float* q = s + (FULL ? ky : ky - ky0) * row;
    for (int kx = kx0; kx < kx1; ++kx) acc = T::fma(T::load(q + (base + kx) * ss), wv[ky][kx], acc);
  }
  finish<T, MODE>(acc, r, d, k, round);
}

// OX adjacent outputs of one channel vector; each input column is loaded once and used by every
// output it feeds. FULL: all KH tap rows are inside the image (else only [ky0, ky1)). MODE: how
// the activation is applied (ActMode).
template <class T, int KH, int KW, int S, int OX, bool FULL, int MODE>
SYSTOLIC_INLINE void tile(const typename T::V (&wv)[KH][KW], const float* s, long row, long ss,
                          int ky0, int ky1, const float* bias, float* d, long ds, const float* r,
                          long rs, const ActConsts<T>& k, bool round) {
  using V = typename T::V;
  V acc[OX];
  const V b = bias ? T::load(bias) : T::zero();
#pragma GCC unroll 8
  for (int o = 0; o < OX; ++o) acc[o] = b;
#pragma GCC unroll 8
  for (int ky = 0; ky < KH; ++ky) {
    if (!FULL && (ky < ky0 || ky >= ky1)) continue;
    const float* q[((OX - 1) * S + KW + 2) / 3];
#pragma GCC unroll 8
    for (int i = 0; i < int(sizeof q / sizeof *q); ++i) {
      // Column bases every 3 pixels, opaque to the optimizer: columns are then addressed as
      // base + {0,1,2} * ss rather than as 20 precomputed offsets spilled to the stack.
      q[i] = s + (FULL ? ky : ky - ky0) * row + 3 * i * ss;
      asm("" : "+r"(q[i]));
    }
#pragma GCC unroll 16
    for (int x = 0; x < (OX - 1) * S + KW; ++x) {
      const V in = T::load(q[x / 3] + (x % 3) * ss);
#pragma GCC unroll 8
      for (int o = 0; o < OX; ++o) {
        const int kx = x - o * S;
        if (kx >= 0 && kx < KW) acc[o] = T::fma(in, wv[ky][kx], acc[o]);
      }
    }
  }
#pragma GCC unroll 8
  for (int o = 0; o < OX; ++o) finish<T, MODE>(acc[o], r ? r + o * rs : r, d + o * ds, k, round);
}

template <class T, int KH, int KW, int S, bool FULL, int MODE>
void row_segment(const RowJob& j, const Epilogue& ep) {
  using V = typename T::V;
  constexpr int OX = 4;
  V wv[KH][KW];
  for (int ky = 0; ky < KH; ++ky)
    for (int kx = 0; kx < KW; ++kx) wv[ky][kx] = T::load(j.w + (ky * KW + kx) * j.cp);
  const float lo = ep.act == Act::relu ? 0.f : ep.a, hi = ep.act == Act::relu ? INFINITY : ep.b;
  const ActConsts<T> k{ep.act, T::set1(ep.a), T::set1(ep.b), T::set1(lo), T::set1(hi)};
  // The bf16 rounding follows the activation: here after one in registers (or none), else in
  // apply_act_n.
  const bool post = MODE == kStore && ep.act != Act::none;
  const bool round = ep.round_bf16 && !post;
  const long row = j.row, ss = j.ss, ds = j.ds, rs = j.rs;
  const int ky0 = j.ky0, ky1 = j.ky1;
  const float* const bias = j.bias;
  auto border = [&](int ox) {
    edge<T, KH, KW, FULL, MODE>(wv, j.src, row, ss, ky0, ky1, ox * S - j.pad_l, j.iw, bias, j.dst + ox * ds,
                               j.res ? j.res + ox * rs : nullptr, k, round);
  };
  for (int ox = 0; ox < j.lo; ++ox) border(ox);
  const float* s = j.src + (long(j.lo) * S - j.pad_l) * ss;
  float* d = j.dst + j.lo * ds;
  const float* r = j.res ? j.res + j.lo * rs : nullptr;
  int ox = j.lo;
  for (; ox + OX <= j.hi; ox += OX, s += OX * S * ss, d += OX * ds, r = r ? r + OX * rs : r)
    tile<T, KH, KW, S, OX, FULL, MODE>(wv, s, row, ss, ky0, ky1, bias, d, ds, r, rs, k, round);
  for (; ox < j.hi; ++ox, s += S * ss, d += ds, r = r ? r + rs : r)
    tile<T, KH, KW, S, 1, FULL, MODE>(wv, s, row, ss, ky0, ky1, bias, d, ds, r, rs, k, round);
  for (ox = j.hi; ox < j.count; ++ox) border(ox);
  if (post)
    for (ox = 0; ox < j.count; ++ox) apply_act_n(ep, j.dst + ox * ds, T::W);
}

using SegmentFn = void (*)(const RowJob&, const Epilogue&);

// [full rows][ActMode]
template <class T, int KH, int KW, int S>
constexpr SegmentFn kSegments[6] = {row_segment<T, KH, KW, S, false, kStore>, row_segment<T, KH, KW, S, false, kClamp>,
                                    row_segment<T, KH, KW, S, false, kVec>,   row_segment<T, KH, KW, S, true, kStore>,
                                    row_segment<T, KH, KW, S, true, kClamp>,  row_segment<T, KH, KW, S, true, kVec>};

// The fast row kernels for this shape, or null for the generic path.
template <class T>
const SegmentFn* fast_path(const ConvParams& p) {
  if (p.dh != 1 || p.dw != 1 || p.sh != p.sw || p.kh != p.kw) return nullptr;
  if (p.kh == 3 && p.sh == 1) return kSegments<T, 3, 3, 1>;
  if (p.kh == 3 && p.sh == 2) return kSegments<T, 3, 3, 2>;
  if (p.kh == 5 && p.sh == 1) return kSegments<T, 5, 5, 1>;
  if (p.kh == 5 && p.sh == 2) return kSegments<T, 5, 5, 2>;
  return nullptr;
}

template <class T>
void run(const ConvParams& p, const ConvArgs& a, pthreadpool_t pool) {
  constexpr int W = T::W, NB = 4;
  const long ss = p.src_stride ? p.src_stride : p.ic, ds = p.dst_stride ? p.dst_stride : p.oc,
             rs = p.res_stride ? p.res_stride : p.oc;
  const int C = p.oc, cp = padded(C);
  // Channel blocks of at most 64 channels (a multiple of 16), as even as possible.
  const int nblk = (C + 63) / 64, cb = ((C + nblk - 1) / nblk + 15) & ~15;
  const int ncb = (C + cb - 1) / cb;
  const SegmentFn* fast = fast_path<T>(p);
  // Outputs [ox_lo, ox_hi) have every horizontal tap inside the image.
  const int ox_lo = std::min(p.ow, (p.pad_l + p.sw - 1) / p.sw);
  const int last = p.iw + p.pad_l - p.dw * (p.kw - 1) - 1;  // largest ox * sw allowed
  const int ox_hi = last < 0 ? ox_lo : std::max(ox_lo, std::min(p.ow, last / p.sw + 1));
  const Act act = a.epilogue.act;
  const int mode = act == Act::relu || act == Act::clip ? kClamp
                   : act != Act::none && act_vectorized(act) ? kVec
                                                              : kStore;
  auto task = [&](std::size_t t) {
    const int c0 = int(t % ncb) * cb, c1 = std::min(C, c0 + cb);
    const int n = int(t / ncb / p.oh), oy = int(t / ncb % p.oh);
    const int iy0 = oy * p.sh - p.pad_t;
    int ky0, ky1;
    tap_range(iy0, p.dh, p.ih, p.kh, &ky0, &ky1);
    const long pix0 = (long(n) * p.oh + oy) * p.ow;
    // Channels [lo, hi) of one pixel on the generic path.
    auto pixel = [&](int ox, int lo, int hi) {
      const int ix0 = ox * p.sw - p.pad_l;
      int kx0, kx1;
      tap_range(ix0, p.dw, p.iw, p.kw, &kx0, &kx1);
      // Offset of tap (0,0), possibly outside the image: only valid taps are read.
      const long s0 = ((long(n) * p.ih + iy0) * p.iw + ix0) * ss;
      float* d = a.dst + (pix0 + ox) * ds;
      const float* r = a.residual ? a.residual + (pix0 + ox) * rs : nullptr;
      int c = lo;
      for (; c + NB * W <= hi; c += NB * W)
        block<T, NB>(p, a, s0, ss, a.weights, cp, c, W, ky0, ky1, kx0, kx1, d, r);
      for (; c < hi; c += W)
        block<T, 1>(p, a, s0, ss, a.weights, cp, c, std::min(W, hi - c), ky0, ky1, kx0, kx1, d, r);
    };
    // Full channel vectors [c0, cv) take the fast path, the rest the generic one.
    const int cv = fast && ky0 < ky1 ? c0 + (c1 - c0) / W * W : c0;
    if (cv < c1)
      for (int ox = 0; ox < p.ow; ++ox) pixel(ox, cv, c1);
    if (cv == c0) return;
    RowJob j;
    j.row = long(p.iw) * ss, j.ss = ss, j.cp = cp, j.ds = ds, j.rs = rs;
    j.count = p.ow, j.lo = ox_lo, j.hi = ox_hi, j.ky0 = ky0, j.ky1 = ky1, j.iw = p.iw, j.pad_l = p.pad_l;
    const float* s = a.src + (long(n) * p.ih + iy0 + ky0) * p.iw * ss;
    const bool full = ky0 == 0 && ky1 == p.kh;
    for (int c = c0; c < cv; c += W) {
      j.src = s + c, j.w = a.weights + c, j.bias = a.bias ? a.bias + c : nullptr;
      j.dst = a.dst + pix0 * ds + c;
      j.res = a.residual ? a.residual + pix0 * rs + c : nullptr;
      fast[3 * full + mode](j, a.epilogue);
    }
  };
  pthreadpool_parallelize_1d(pool, task, std::size_t(p.n) * p.oh * ncb, kPoolFlags);
}

}  // namespace
}  // namespace systolic::kernels::dw
