// Depthwise NHWC conv (groups == ic == oc) over a vector traits struct: channel vectors,
// any kernel size/stride/dilation/pads, fused epilogue. Weights packed [ky][kx][c padded].
#pragma once
#include <algorithm>

#include "kernels/conv/conv.h"
#include "kernels/gemm/igemm_microkernel.h"

namespace systolic::kernels::dw {

constexpr int kChannelPad = 16;  // packed channel rows are padded to this (both ISAs)
constexpr int padded(int c) { return (c + kChannelPad - 1) / kChannelPad * kChannelPad; }

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
  const bool vec_act = act_vectorized(a.epilogue.act);
  const V va = T::set1(a.epilogue.a), vb = T::set1(a.epilogue.b);
#pragma GCC unroll 4
  for (int v = 0; v < NB; ++v) {
    V x = acc[v];
    if (r) x = T::add(x, ld(r + c, v));
    if (vec_act) x = act_vec<T>(x, a.epilogue.act, va, vb);
    if (v == NB - 1 && tail < W) T::store_n(d + c + v * W, x, tail);
    else T::store(d + c + v * W, x);
  }
  if (!vec_act) apply_act_n(a.epilogue, d + c, (NB - 1) * W + tail);
}

template <class T>
void run(const ConvParams& p, const ConvArgs& a, pthreadpool_t pool) {
  constexpr int W = T::W, NB = 4;
  const long ss = p.src_stride ? p.src_stride : p.ic, ds = p.dst_stride ? p.dst_stride : p.oc,
             rs = p.res_stride ? p.res_stride : p.oc;
  const int C = p.oc, cp = padded(C);
  auto row = [&](std::size_t task) {
    const int n = int(task / p.oh), oy = int(task % p.oh);
    const int iy0 = oy * p.sh - p.pad_t;
    int ky0, ky1;
    tap_range(iy0, p.dh, p.ih, p.kh, &ky0, &ky1);
    for (int ox = 0; ox < p.ow; ++ox) {
      const int ix0 = ox * p.sw - p.pad_l;
      int kx0, kx1;
      tap_range(ix0, p.dw, p.iw, p.kw, &kx0, &kx1);
      const long pix = (long(n) * p.oh + oy) * p.ow + ox;
      // Offset of tap (0,0), possibly outside the image: only valid taps are read.
      const long s0 = ((long(n) * p.ih + iy0) * p.iw + ix0) * ss;
      float* d = a.dst + pix * ds;
      const float* r = a.residual ? a.residual + pix * rs : nullptr;
      int c = 0;
      for (; c + NB * W <= C; c += NB * W)
        block<T, NB>(p, a, s0, ss, a.weights, cp, c, W, ky0, ky1, kx0, kx1, d, r);
      for (; c < C; c += W)
        block<T, 1>(p, a, s0, ss, a.weights, cp, c, std::min(W, C - c), ky0, ky1, kx0, kx1, d, r);
    }
  };
  pthreadpool_parallelize_1d(pool, row, std::size_t(p.n) * p.oh);
}

}  // namespace
}  // namespace systolic::kernels::dw
