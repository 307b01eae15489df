// Winograd F(mxm, 3x3) NHWC conv over a vector traits struct: an (m+2)x(m+2) input tile becomes
// (m+2)^2 transformed channel vectors, the conv becomes that many independent GEMMs (tiles x ic
// times ic x oc, run by the implicit-GEMM microkernel), and each result tile becomes mxm outputs
// with the epilogue fused. F(4x4): 4x fewer multiplies than direct 3x3 on whole tiles, packed
// weights 4x larger; F(2x2): 2.25x fewer, weights 1.8x larger. Transforms and weight traffic
// cost, so conv_winograd.cc accepts each only where it wins. A task keeps its tile block's
// transformed input and GEMM results in its thread's scratch buffer (kernels/thread_scratch.h).
#pragma once
#include <algorithm>
#include <cstdlib>

#include "base/threadpool.h"
#include "kernels/conv/conv.h"
#include "kernels/conv/igemm_blocking.h"
#include "kernels/conv/winograd_blocking.h"
#include "kernels/gemm/igemm_microkernel.h"
#include "kernels/thread_scratch.h"

namespace systolic::kernels::winograd {

// F(4x4, 3x3) (Lavin & Gray 2016, points 0, +-1, +-2, inf):
//   B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]
//   G   = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1]
//   A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
struct F4x3 {
  static constexpr int kTile = 4, kIn = 6;
  static constexpr double G[kIn][3] = {{1 / 4., 0, 0},          {-1 / 6., -1 / 6., -1 / 6.},
                                       {-1 / 6., 1 / 6., -1 / 6.}, {1 / 24., 1 / 12., 1 / 6.},
                                       {1 / 24., -1 / 12., 1 / 6.}, {0, 0, 1}};
  // r = B^T x for one row or column of the tile.
  template <class T>
  SYSTOLIC_INLINE static void input_1d(const typename T::V (&x)[kIn], typename T::V (&r)[kIn]) {
    using V = typename T::V;
    const V c4 = T::set1(4.f), cm4 = T::set1(-4.f), cm5 = T::set1(-5.f), c2 = T::set1(2.f);
    const V a = T::fma(cm4, x[2], x[4]);         // -4x2 + x4
    const V b = T::fma(cm4, x[1], x[3]);         // -4x1 + x3
    const V c = T::sub(x[4], x[2]);              // x4 - x2
    const V d = T::mul(c2, T::sub(x[3], x[1]));  // 2(x3 - x1)
    r[0] = T::fma(c4, x[0], T::fma(cm5, x[2], x[4]));
    r[1] = T::add(a, b);
    r[2] = T::sub(a, b);
    r[3] = T::add(c, d);
    r[4] = T::sub(c, d);
    r[5] = T::fma(c4, x[1], T::fma(cm5, x[3], x[5]));
  }
  // o = A^T m.
  template <class T>
  SYSTOLIC_INLINE static void output_1d(const typename T::V (&m)[kIn], typename T::V (&o)[kTile]) {
    using V = typename T::V;
    const V s12 = T::add(m[1], m[2]), d12 = T::sub(m[1], m[2]);
    const V s34 = T::add(m[3], m[4]), d34 = T::sub(m[3], m[4]);
    o[0] = T::add(T::add(m[0], s12), s34);
    o[1] = T::fma(T::set1(2.f), d34, d12);
    o[2] = T::fma(T::set1(4.f), s34, s12);
    o[3] = T::add(T::fma(T::set1(8.f), d34, d12), m[5]);
  }
};

// F(2x2, 3x3): B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], G = [1 0 0; 1/2 1/2 1/2;
// 1/2 -1/2 1/2; 0 0 1], A^T = [1 1 1 0; 0 1 -1 -1].
struct F2x3 {
  static constexpr int kTile = 2, kIn = 4;
  static constexpr double G[kIn][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  template <class T>
  SYSTOLIC_INLINE static void input_1d(const typename T::V (&x)[kIn], typename T::V (&r)[kIn]) {
    r[0] = T::sub(x[0], x[2]);
    r[1] = T::add(x[1], x[2]);
    r[2] = T::sub(x[2], x[1]);
    r[3] = T::sub(x[1], x[3]);
  }
  template <class T>
  SYSTOLIC_INLINE static void output_1d(const typename T::V (&m)[kIn], typename T::V (&o)[kTile]) {
    o[0] = T::add(T::add(m[0], m[1]), m[2]);
    o[1] = T::sub(T::sub(m[1], m[2]), m[3]);
  }
};

// Transformed elements: independent GEMMs.
template <class F>
constexpr int kElems = F::kIn * F::kIn;

// Packed layout: [element][panel][c][NR], channels past oc zero in the last panel.
template <class F, int NR>
std::size_t packed_floats(const ConvParams& p) {
  return std::size_t(kElems<F>) * igemm::ceil_div(p.oc, NR) * p.ic * NR;
}

// U = G g G^T per (k, c), in double so the packed weights carry no extra rounding.
template <class F, int NR>
void pack(const ConvParams& p, const float* w, float* out) {
  constexpr int kIn = F::kIn;
  constexpr auto& G = F::G;
  const int panels = igemm::ceil_div(p.oc, NR);
  std::fill(out, out + packed_floats<F, NR>(p), 0.f);
  for (int k = 0; k < p.oc; ++k)
    for (int c = 0; c < p.ic; ++c) {
      const float* g = w + (std::size_t(k) * p.ic + c) * 9;
      double t[kIn][3];  // G g
      for (int i = 0; i < kIn; ++i)
        for (int j = 0; j < 3; ++j) t[i][j] = G[i][0] * g[j] + G[i][1] * g[3 + j] + G[i][2] * g[6 + j];
      for (int i = 0; i < kIn; ++i)
        for (int j = 0; j < kIn; ++j) {
          const double u = t[i][0] * G[j][0] + t[i][1] * G[j][1] + t[i][2] * G[j][2];
          const std::size_t e = i * kIn + j;
          out[((e * panels + k / NR) * p.ic + c) * NR + k % NR] = float(u);
        }
    }
}

namespace {

struct Ctx {
  ConvParams p;
  ConvArgs a;
  long ss, ds, rs;  // pixel strides
  int tiles_y, tiles_x, icp, panels;
  long tiles, tb;   // all tiles; tiles of the largest block (block_max)
};

// V[e][t][c] for the block's tiles [t0, t0 + nt): input patches (zeros outside the image),
// transformed a channel vector at a time, rows first into a small buffer, then columns: the
// whole patch at once does not fit the vector registers (36 of them for F(4x4)).
template <class F, class T>
void transform_input(const Ctx& x, long t0, int nt, float* v) {
  using V = typename T::V;
  constexpr int kTile = F::kTile, kIn = F::kIn, W = T::W;
  const ConvParams& p = x.p;
  const long per_img = long(x.tiles_y) * x.tiles_x;
  const long estride = x.tb * x.icp;  // between elements
  const float* src = x.a.src;
  alignas(64) float tmp[kIn][kIn][W];  // d B
  for (int t = 0; t < nt; ++t) {
    const long tile = t0 + t, img = tile / per_img, rem = tile - img * per_img;
    const int iy0 = int(rem / x.tiles_x) * kTile - p.pad_t, ix0 = int(rem % x.tiles_x) * kTile - p.pad_l;
    // The patch's rows [i0, i1) and columns [j0, j1) lie inside the image.
    const int i0 = std::max(0, -iy0), i1 = std::min(kIn, p.ih - iy0);
    const int j0 = std::max(0, -ix0), j1 = std::min(kIn, p.iw - ix0);
    const bool inside = j0 == 0 && j1 == kIn;
    // The patch's first pixel as an offset: it may lie outside the image, so no pointer is
    // formed from it but for pixels inside.
    const long base = (img * p.ih * p.iw + long(iy0) * p.iw + ix0) * x.ss;
    float* vt = v + long(t) * x.icp;
    for (int c = 0; c < p.ic; c += W) {
      const int n = std::min(W, p.ic - c);
#pragma GCC unroll 8
      for (int i = 0; i < kIn; ++i) {
        V row[kIn], r[kIn];
        const long s = base + long(i) * p.iw * x.ss + c;
        if (i < i0 || i >= i1) {
#pragma GCC unroll 8
          for (int j = 0; j < kIn; ++j) row[j] = T::zero();
        } else if (inside && n == W) {
#pragma GCC unroll 8
          for (int j = 0; j < kIn; ++j) row[j] = T::load(src + (s + j * x.ss));
        } else {
#pragma GCC unroll 8
          for (int j = 0; j < kIn; ++j)
            row[j] = j < j0 || j >= j1 ? T::zero() : n == W ? T::load(src + (s + j * x.ss)) : T::load_n(src + (s + j * x.ss), n);
        }
        F::template input_1d<T>(row, r);
#pragma GCC unroll 8
        for (int j = 0; j < kIn; ++j) T::store(tmp[i][j], r[j]);
      }
#pragma GCC unroll 8
      for (int j = 0; j < kIn; ++j) {  // B^T (d B), column by column
        V col[kIn], r[kIn];
#pragma GCC unroll 8
        for (int i = 0; i < kIn; ++i) col[i] = T::load(tmp[i][j]);
        F::template input_1d<T>(col, r);
#pragma GCC unroll 8
        for (int i = 0; i < kIn; ++i) T::store(vt + (i * kIn + j) * estride + c, r[i]);
      }
    }
  }
}

// dst tiles from M[e][t][0..NR) of one panel: A^T m A (rows into a small buffer, then columns),
// then bias, residual, activation and the bf16 rounding when asked.
template <class F, class T, int NR>
void transform_output(const Ctx& x, long t0, int nt, int panel, const float* m) {
  using V = typename T::V;
  constexpr int kTile = F::kTile, kIn = F::kIn, W = T::W;
  const ConvParams& p = x.p;
  const Epilogue& ep = x.a.epilogue;
  const bool vec_act = act_vectorized(ep.act), vec_round = vec_act && ep.round_bf16;
  const V va = T::set1(ep.a), vb = T::set1(ep.b);
  const long per_img = long(x.tiles_y) * x.tiles_x;
  const long estride = x.tb * NR;
  const int k0 = panel * NR;
  alignas(64) float tmp[kIn][kTile][W];  // m A
  for (int t = 0; t < nt; ++t) {
    const long tile = t0 + t, img = tile / per_img, rem = tile - img * per_img;
    const int oy0 = int(rem / x.tiles_x) * kTile, ox0 = int(rem % x.tiles_x) * kTile;
    const int ny = std::min(kTile, p.oh - oy0), nx = std::min(kTile, p.ow - ox0);
    const long pix0 = (img * p.oh + oy0) * p.ow + ox0;
    const float* mt = m + long(t) * NR;
    for (int j = 0; j < NR; j += W) {
      const int n = std::min(W, p.oc - k0 - j);
      if (n <= 0) break;
#pragma GCC unroll 8
      for (int i = 0; i < kIn; ++i) {
        V row[kIn], r[kTile];
#pragma GCC unroll 8
        for (int q = 0; q < kIn; ++q) row[q] = T::load(mt + (i * kIn + q) * estride + j);
        F::template output_1d<T>(row, r);
#pragma GCC unroll 8
        for (int q = 0; q < kTile; ++q) T::store(tmp[i][q], r[q]);
      }
      const V b = x.a.bias ? (n == W ? T::load(x.a.bias + k0 + j) : T::load_n(x.a.bias + k0 + j, n)) : T::zero();
#pragma GCC unroll 8
      for (int xx = 0; xx < nx; ++xx) {  // A^T (m A), column by column: output column xx
        V col[kIn], o[kTile];
#pragma GCC unroll 8
        for (int i = 0; i < kIn; ++i) col[i] = T::load(tmp[i][xx]);
        F::template output_1d<T>(col, o);
#pragma GCC unroll 8
        for (int yy = 0; yy < ny; ++yy) {
          const long pix = pix0 + long(yy) * p.ow + xx;
          V y = T::add(o[yy], b);
          if (x.a.residual) {
            const float* r = x.a.residual + pix * x.rs + k0 + j;
            y = T::add(y, n == W ? T::load(r) : T::load_n(r, n));
          }
          if (vec_act) y = act_vec<T>(y, ep.act, va, vb);
          if (vec_round) y = T::round_bf16(y);
          float* d = x.a.dst + pix * x.ds + k0 + j;
          if (n == W) T::store(d, y);
          else T::store_n(d, y, n);
          if (!vec_act) apply_act_n(ep, d, n);
        }
      }
    }
  }
}

// Picks the R = rows instantiation (R = 1..MR) at run time for one GEMM tile.
template <class T, int R, int NV>
void gemm_rows(int rows, int kc, const float* w, const float* v, long vstride, const TileOut& o) {
  if constexpr (R > 1)
    if (rows < R) return gemm_rows<T, R - 1, NV>(rows, kc, w, v, vstride, o);
  igemm_tile<T, R, NV>(1, kc, w, [&](int, const float** r) {
    for (int i = 0; i < R; ++i) r[i] = v + i * vstride;
  }, o);
}

template <class F, class T, int MR, int NV>
void run(const ConvParams& p, const ConvArgs& a, pthreadpool_t pool, const igemm::Blocking& bl) {
  constexpr int NR = NV * T::W, kElems = winograd::kElems<F>;
  const long threads = long(pthreadpool_get_threads_count(pool));
  const Grid gr = grid(p, F::kTile, kElems, MR, NR, threads, bl);
  Ctx x{p, a, p.src_stride ? p.src_stride : p.ic, p.dst_stride ? p.dst_stride : p.oc,
        p.res_stride ? p.res_stride : p.oc, gr.tiles_y, gr.tiles_x, (p.ic + T::W - 1) / T::W * T::W,
        gr.panels, gr.tiles, block_max(gr, MR)};
  const long groups = gr.groups;
  auto task = [&](std::size_t b, std::size_t gi) {
    const long t0 = block_start(gr, long(b), MR);
    const int nt = int(block_start(gr, long(b) + 1, MR) - t0);
    float* v = static_cast<float*>(thread_scratch(std::size_t(kElems) * x.tb * (x.icp + NR) * sizeof(float)));
    if (!v) std::abort();  // out of memory for a few MiB: nothing sensible is left to do
    float* m = v + std::size_t(kElems) * x.tb * x.icp;
    transform_input<F, T>(x, t0, nt, v);
    const int pn0 = int(gi * x.panels / groups), pn1 = int((gi + 1) * x.panels / groups);
    for (int pn = pn0; pn < pn1; ++pn) {
      for (int e = 0; e < kElems; ++e) {
        const float* w = a.weights + (long(e) * x.panels + pn) * p.ic * NR;
        const float* ve = v + long(e) * x.tb * x.icp;
        float* me = m + long(e) * x.tb * NR;
        // The next element's (or panel's) weights, fetched into L2 a slice per tile while this
        // one's run: without it each element's first tile waited for memory (4-26% of a
        // Winograd layer in ResNet-50, docs/benchmarks.md).
        const bool more = e + 1 < kElems || pn + 1 < pn1;
        const char* nw = reinterpret_cast<const char*>(
            a.weights + (e + 1 < kElems ? long(e + 1) * x.panels + pn : pn + 1) * p.ic * NR);
        const long nbytes = more ? long(p.ic) * NR * 4 : 0, calls = igemm::ceil_div(nt, MR);
        for (int t = 0; t < nt; t += MR) {
          const long c = t / MR;
          const TileOut o{me + long(t) * NR, NR, nullptr, 0, nullptr, NR, Epilogue{}, false, false,
                          nw + nbytes * c / calls / 64 * 64, nw + nbytes * (c + 1) / calls};
          gemm_rows<T, MR, NV>(std::min(MR, nt - t), p.ic, w, ve + long(t) * x.icp, x.icp, o);
        }
      }
      transform_output<F, T, NR>(x, t0, nt, pn, m);
    }
  };
  pthreadpool_parallelize_2d(pool, task, std::size_t(gr.blocks), std::size_t(groups), kPoolFlags);
}

}  // namespace
}  // namespace systolic::kernels::winograd
