// NHWC max/avg pooling over a vector traits struct: channel vectors, valid-tap ranges computed
// per output pixel (so pads cost nothing), a linear loop for global pooling; on floats, or max
// pools on bf16 storage (uint16_t).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "base/threadpool.h"
#include "kernels/bf16_lanes.h"
#include "kernels/pool/pool.h"

namespace systolic::kernels::pool {
namespace {

// [lo, hi): tap indices k < taps with 0 <= base + k*d < size.
inline void tap_range(int base, int d, int size, int taps, int* lo, int* hi) {
  const int l = base >= 0 ? 0 : (-base + d - 1) / d;
  const int h = size - base <= 0 ? 0 : (size - base + d - 1) / d;
  *lo = std::min(l, taps);
  *hi = std::max(*lo, std::min(h, taps));
}

// n channels (n <= W) as a vector: floats, or bf16 storage (PoolParams::bf16) widened (a bf16
// value is the high half of its float: exact).
template <class T>
inline typename T::V load(const float* q, int n) {
  return n < T::W ? T::load_n(q, n) : T::load(q);
}
template <class T>
inline typename T::V load(const uint16_t* q, int n) {
  return load_bf16<T>(q, n);
}
template <class T>
inline void store(float* d, typename T::V v, int n) {
  if (n < T::W) T::store_n(d, v, n);
  else T::store(d, v);
}
// A maximum of widened bf16 values is one of them, so its high half is all of it.
template <class T>
inline void store(uint16_t* d, typename T::V v, int n) {
  store_bf16<T>(d, v, n);
}

// Channels [c, c + NB*W) of one output pixel (last vector holds `tail` lanes); `at(ky, kx)` gives
// the source pixel of a valid tap. E: the storage (float, or uint16_t bf16 bits).
template <class T, int NB, class E, class At>
inline void block(bool is_max, float scale, int c, int tail, int ky0, int ky1, int kx0, int kx1,
                  At&& at, E* d) {
  using V = typename T::V;
  constexpr int W = T::W;
  auto ld = [&](const E* q, int v) { return load<T>(q + v * W, v == NB - 1 ? tail : W); };
  V acc[NB];
  const V init = is_max ? T::set1(-std::numeric_limits<float>::infinity()) : T::zero();
  for (int v = 0; v < NB; ++v) acc[v] = init;
  for (int ky = ky0; ky < ky1; ++ky)
    for (int kx = kx0; kx < kx1; ++kx) {
      const E* s = at(ky, kx) + c;
      if (is_max) {
#pragma GCC unroll 4
        for (int v = 0; v < NB; ++v) acc[v] = T::max(acc[v], ld(s, v));
      } else {
#pragma GCC unroll 4
        for (int v = 0; v < NB; ++v) acc[v] = T::add(acc[v], ld(s, v));
      }
    }
  const V vs = T::set1(scale);
#pragma GCC unroll 4
  for (int v = 0; v < NB; ++v) {
    const V x = is_max ? acc[v] : T::mul(acc[v], vs);
    store<T>(d + c + v * W, x, v == NB - 1 ? tail : W);
  }
}

template <class T, class E, class At>
inline void channels(bool is_max, float scale, int c0, int c1, int ky0, int ky1, int kx0, int kx1,
                     At&& at, E* d) {
  constexpr int W = T::W, NB = 4;
  int c = c0;
  for (; c + NB * W <= c1; c += NB * W) block<T, NB>(is_max, scale, c, W, ky0, ky1, kx0, kx1, at, d);
  for (; c < c1; c += W) block<T, 1>(is_max, scale, c, std::min(W, c1 - c), ky0, ky1, kx0, kx1, at, d);
}

template <class T, class E>
void run(const PoolParams& p, const E* src, E* dst, pthreadpool_t pool) {
  const long ss = p.src_stride ? p.src_stride : p.c, ds = p.dst_stride ? p.dst_stride : p.c;
  const bool is_max = p.kind == PoolKind::max;
  const long pixels = long(p.n) * p.oh * p.ow;
  // Few output pixels (global pooling): split the channels too, so every thread has work.
  const int ctile = std::max(4 * T::W, (p.c / 8 + T::W - 1) / T::W * T::W);
  const bool global = p.kh == p.ih && p.kw == p.iw && p.oh == 1 && p.ow == 1 && p.pad_t == 0 &&
                      p.pad_l == 0 && p.dh == 1 && p.dw == 1;
  // One output pixel, channels [c0, c0 + cn).
  auto pixel = [&](long pix, int n, int oy, int ox, int c0, int cn) {
    E* d = dst + pix * ds;
    const E* img = src + long(n) * p.ih * p.iw * ss;
    if (global) {  // one linear run over the image's pixels
      const float scale = 1.f / float(long(p.ih) * p.iw);
      channels<T>(is_max, scale, c0, c0 + cn, 0, 1, 0, p.ih * p.iw, [&](int, int i) { return img + long(i) * ss; }, d);
      return;
    }
    const int iy0 = oy * p.sh - p.pad_t, ix0 = ox * p.sw - p.pad_l;
    int ky0, ky1, kx0, kx1;
    tap_range(iy0, p.dh, p.ih, p.kh, &ky0, &ky1);
    tap_range(ix0, p.dw, p.iw, p.kw, &kx0, &kx1);
    long count = long(ky1 - ky0) * (kx1 - kx0);
    if (p.count_include_pad) {
      int py0, py1, px0, px1;
      tap_range(iy0 + p.pad_t, p.dh, p.ih + p.pad_t + p.pad_b, p.kh, &py0, &py1);
      tap_range(ix0 + p.pad_l, p.dw, p.iw + p.pad_l + p.pad_r, p.kw, &px0, &px1);
      count = long(py1 - py0) * (px1 - px0);
    }
    const float scale = count ? 1.f / float(count) : 0.f;
    channels<T>(is_max, scale, c0, c0 + cn, ky0, ky1, kx0, kx1, [&](int ky, int kx) {
      return img + (long(iy0 + ky * p.dh) * p.iw + ix0 + kx * p.dw) * ss;
    }, d);
  };
  if (pixels >= 16) {
    // A task per output row: a task per pixel cost more in scheduling and index divisions than
    // the taps of few channels (ShuffleNet's 24-channel 3x3 max pool at batch 16: 2.8 ms).
    auto row = [&](std::size_t r) {
      const int n = int(long(r) / p.oh), oy = int(long(r) % p.oh);
      const long pix0 = long(r) * p.ow;
      for (int ox = 0; ox < p.ow; ++ox) pixel(pix0 + ox, n, oy, ox, 0, p.c);
    };
    pthreadpool_parallelize_1d(pool, row, std::size_t(long(p.n) * p.oh), kPoolFlags);
    return;
  }
  auto task = [&](std::size_t pix, std::size_t c0, std::size_t cn) {
    const int n = int(long(pix) / (long(p.oh) * p.ow)), rem = int(long(pix) % (long(p.oh) * p.ow));
    pixel(long(pix), n, rem / p.ow, rem % p.ow, int(c0), int(cn));
  };
  pthreadpool_parallelize_2d_tile_1d(pool, task, std::size_t(pixels), std::size_t(p.c),
                                     std::size_t(ctile), kPoolFlags);
}

}  // namespace
}  // namespace systolic::kernels::pool
