// The int8 Winograd conv run (qconv_winograd.h) over an instruction set's traits X:
//   X::T    the int16 GEMM traits (A = B = int16_t, KG = 2) with the direct kernels' epilogue
//   X::S    the tile shape (qwinograd::Ymm or Zmm)
//   X::I16  a GCC vector of S::CW int16; X::U32 and X::S32 of T::W uint32 and int32 (the
//           transforms' arithmetic: the output side wraps, so on unsigned lanes)
//   X::widen16(p)  S::CW bytes to int16
// Per block of tiles: the input tiles transformed S::CW channels at a time, then per panel and
// per chunk of the block's tiles the element GEMMs on the igemm tile, the output transform, the
// division by s^2 and the requantizing epilogue over each tile row's pixels. Include only from
// an instruction set's file.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "kernels/qconv/qconv_igemm.h"
#include "kernels/qconv/qconv_winograd.h"
#include "kernels/thread_scratch.h"

namespace systolic::kernels::qwinograd {
namespace {

// The ymm traits (AVX2 and AVX-VNNI), over the int16 GEMM traits Gemm: 16 channels widened per
// input vector, sums on 8 lanes.
template <class Gemm>
struct YmmTraits {
  using T = Gemm;
  using S = Ymm;
  typedef int16_t I16 __attribute__((vector_size(32)));
  typedef uint32_t U32 __attribute__((vector_size(32)));
  typedef int32_t S32 __attribute__((vector_size(32)));
  static I16 widen16(const uint8_t* p) {
    return I16(_mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
};

struct Ctx {
  QConvParams qp;
  QConvArgs a;
  long ss, ds, rs;  // pixel strides
  winograd::Grid g;
};

// r = B^T x along one side of the tile (qconv_winograd.h), int16 lanes.
template <class I>
SYSTOLIC_INLINE void input_1d(F2, const I (&x)[4], I (&r)[4]) {
  r[0] = x[0] - x[2];
  r[1] = x[1] + x[2];
  r[2] = x[2] - x[1];
  r[3] = x[1] - x[3];
}
template <class I>
SYSTOLIC_INLINE void input_1d(F3, const I (&x)[5], I (&r)[5]) {
  const I d31 = x[3] - x[1], d32 = x[3] - x[2], d02 = x[0] - x[2], d12 = x[1] - x[2];
  const I d13 = x[1] - x[3], d42 = x[4] - x[2];
  r[0] = (d02 + d02) + d31;        // 2x0 - x1 - 2x2 + x3
  r[1] = d32 - (x[1] + x[1]);      // -2x1 - x2 + x3
  r[2] = d32 + (d12 + d12);        // 2x1 - 3x2 + x3
  r[3] = d31;                      // -x1 + x3
  r[4] = (d13 + d13) + d42;        // 2x1 - x2 - 2x3 + x4
}

// y = A^T m along one side, 32-bit lanes (mod 2^32).
template <class I>
SYSTOLIC_INLINE void output_1d(F2, const I (&m)[4], I (&y)[2]) {
  y[0] = (m[0] + m[1]) + m[2];
  y[1] = (m[1] - m[2]) - m[3];
}
template <class I>
SYSTOLIC_INLINE void output_1d(F3, const I (&m)[5], I (&y)[3]) {
  const I s12 = m[1] + m[2], d12 = m[1] - m[2], m3x2 = m[3] + m[3];
  y[0] = (m[0] + s12) + m[3];           // m0 + m1 + m2 + m3
  y[1] = d12 + m3x2;                    // m1 - m2 + 2m3
  y[2] = (s12 + (m3x2 + m3x2)) + m[4];  // m1 + m2 + 4m3 + m4
}

// The window sums from s^2 x them (mod 2^32): the odd factor's inverse, then the shift by 2.
template <class F, class X>
SYSTOLIC_INLINE typename X::U32 unscale(typename X::U32 y) {
  if constexpr (F::kOdd != 1) {
    constexpr uint32_t inv = [] {  // Newton's iteration for the inverse mod 2^32
      uint32_t v = F::kOdd;
      for (int i = 0; i < 5; ++i) v *= 2u - F::kOdd * v;
      return v;
    }();
    static_assert(uint32_t(F::kOdd * inv) == 1u);
    y = y * inv;
  }
  return typename X::U32(typename X::S32(y) >> 2);  // arithmetic: the sums are signed
}

// v[e][t][c] (int16, rows of ic) for the block's tiles [t0, t0 + nt): each patch's bytes (the
// pad bytes outside the image), B^T d B, CW channels at a time.
template <class F, class X>
void transform_input(const Ctx& x, long t0, int nt, int16_t* v) {
  using I = typename X::I16;
  constexpr int kTile = F::kTile, kIn = F::kIn, CW = X::S::CW;
  const ConvParams& p = x.qp.conv;
  const long per_img = long(x.g.tiles_y) * x.g.tiles_x, estride = long(nt) * p.ic;
  for (int t = 0; t < nt; ++t) {
    const long tile = t0 + t, img = tile / per_img, rem = tile - img * per_img;
    const int iy0 = int(rem / x.g.tiles_x) * kTile - p.pad_t, ix0 = int(rem % x.g.tiles_x) * kTile - p.pad_l;
    int16_t* vt = v + long(t) * p.ic;
    // CW channels of the patch at a time; pixel(i, j, c) widens patch pixel (i, j)'s.
    auto channels = [&](auto pixel) {
      for (int c = 0; c < p.ic; c += CW) {
        I u[kIn][kIn];  // d B, row by row
#pragma GCC unroll 5
        for (int i = 0; i < kIn; ++i) {
          I d[kIn];
#pragma GCC unroll 5
          for (int j = 0; j < kIn; ++j) d[j] = pixel(i, j, c);
          input_1d(F{}, d, u[i]);
        }
#pragma GCC unroll 5
        for (int j = 0; j < kIn; ++j) {  // B^T (d B), column by column
          I col[kIn], r[kIn];
#pragma GCC unroll 5
          for (int i = 0; i < kIn; ++i) col[i] = u[i][j];
          input_1d(F{}, col, r);
#pragma GCC unroll 5
          for (int i = 0; i < kIn; ++i) std::memcpy(vt + (i * kIn + j) * estride + c, &r[i], sizeof(I));
        }
      }
    };
    if (iy0 >= 0 && ix0 >= 0 && iy0 + kIn <= p.ih && ix0 + kIn <= p.iw) {  // inside the image: no pad
      const uint8_t* b = x.a.src + ((img * p.ih + iy0) * p.iw + ix0) * x.ss;
      const long row = long(p.iw) * x.ss, ss = x.ss;
      channels([&](int i, int j, int c) { return X::widen16(b + i * row + j * ss + c); });
      continue;
    }
    const uint8_t* px[kIn][kIn];  // each patch pixel's first channel, or null outside the image
    for (int i = 0; i < kIn; ++i)
      for (int j = 0; j < kIn; ++j) {
        const int iy = iy0 + i, ix = ix0 + j;
        px[i][j] = unsigned(iy) < unsigned(p.ih) && unsigned(ix) < unsigned(p.iw)
                       ? x.a.src + ((img * p.ih + iy) * p.iw + ix) * x.ss
                       : nullptr;
      }
    channels([&](int i, int j, int c) { return px[i][j] ? X::widen16(px[i][j] + c) : X::widen16(x.a.pad + c); });
  }
}

// For the nt tiles whose sums m[e][t][NR] hold (element stride estride), o[py][t][px][NR] =
// (A^T m A) / s^2: the window sums, bias not yet added; exact (qconv_winograd.h).
template <class F, class X>
void transform_output(int nt, const int32_t* m, long estride, int32_t* o) {
  using T = typename X::T;
  using I = typename X::U32;
  constexpr int kTile = F::kTile, kIn = F::kIn, NR = X::S::NR;
  for (int t = 0; t < nt; ++t)
    for (int j = 0; j < NR; j += T::W) {
      I s[kIn][kTile];  // m A, row by row
#pragma GCC unroll 5
      for (int i = 0; i < kIn; ++i) {
        const int32_t* r = m + i * kIn * estride + long(t) * NR + j;
        I row[kIn];
#pragma GCC unroll 5
        for (int q = 0; q < kIn; ++q) row[q] = I(T::load32(r + q * estride));
        output_1d(F{}, row, s[i]);
      }
#pragma GCC unroll 3
      for (int q = 0; q < kTile; ++q) {  // A^T (m A), output column q
        I col[kIn], y[kTile];
#pragma GCC unroll 5
        for (int i = 0; i < kIn; ++i) col[i] = s[i][q];
        output_1d(F{}, col, y);
#pragma GCC unroll 3
        for (int py = 0; py < kTile; ++py)
          T::store32(o + ((py * nt + t) * kTile + q) * NR + j, typename T::V(unscale<F, X>(y[py])));
      }
    }
}

// f(t, py, pix, npix) for each output row py of each run of tiles [t0, t0 + nt) that lies in
// one tile row (t its first tile, counted from t0): that row's outputs are npix pixels from
// pixel index pix on.
template <class F, class Fn>
void for_each_row_run(const Ctx& x, long t0, int nt, Fn f) {
  constexpr int kTile = F::kTile;
  const ConvParams& p = x.qp.conv;
  const long per_img = long(x.g.tiles_y) * x.g.tiles_x;
  for (int t = 0; t < nt;) {
    const long tile = t0 + t, img = tile / per_img, rem = tile - img * per_img;
    const int ty = int(rem / x.g.tiles_x), tx = int(rem % x.g.tiles_x);
    const int run = std::min(nt - t, x.g.tiles_x - tx);
    const int ox0 = tx * kTile, npix = std::min(run * kTile, p.ow - ox0);
    for (int py = 0; py < kTile && ty * kTile + py < p.oh; ++py)
      f(t, py, (img * p.oh + ty * kTile + py) * p.ow + ox0, npix);
    t += run;
  }
}

// The epilogue of one panel's outputs o (transform_output's layout) for tiles [t0, t0 + nt), a
// row of a run at a time; whole 64-channel panels through the four-column form.
template <class F, class X>
void store_panel(const Ctx& x, long t0, int nt, int pn, const int32_t* o) {
  using T = typename X::T;
  constexpr int NR = X::S::NR;
  const QConvArgs& a = x.a;
  const long ch = long(pn) * NR;
  for_each_row_run<F>(x, t0, nt, [&](int t, int py, long pix, int npix) {
    const int32_t* c = o + (long(py) * nt + t) * F::kTile * NR;
    const uint8_t* r = a.residual ? static_cast<const uint8_t*>(a.residual) + pix * x.rs + ch : nullptr;
    uint8_t* d = static_cast<uint8_t*>(a.dst) + pix * x.ds + ch;
    if constexpr (qigemm::has_packed_rows<T, NR / T::W>()) {
      T::requant_rows_packed(c, NR, npix, a.bias + ch, a.scale + ch, r, x.rs, a.rq, d, x.ds);
    } else {
      for (int j = 0; j < NR; j += T::W)
        T::requant_rows(c + j, NR, npix, T::W, a.bias + ch + j, a.scale + ch + j, r ? r + j : nullptr, x.rs, a.rq,
                        d + j, x.ds);
    }
  });
}

// The fused table over the pixels a task wrote, channels [c0, c1).
template <class F>
void lut_block(const Ctx& x, long t0, int nt, long c0, long c1) {
  const QRequant& rq = x.a.rq;
  if (!rq.lut) return;
  for_each_row_run<F>(x, t0, nt, [&](int, int, long pix, int npix) {
    uint8_t* d = static_cast<uint8_t*>(x.a.dst) + pix * x.ds + c0;
    rq.lut_rows(rq.lut, d, x.ds, d, x.ds, c1 - c0, npix);
  });
}

// m[i][NR] for R tiles of one element: the igemm tile over the transformed rows.
template <class T, int R, int NV>
void gemm_rows(int rows, long ic, const int16_t* v, const int16_t* w, int32_t* m) {
  if constexpr (R > 1)
    if (rows < R) return gemm_rows<T, R - 1, NV>(rows, ic, v, w, m);
  typename T::V acc[R][NV];
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) acc[i][j] = T::zero();
  qigemm::dot_tile<T, R, NV>(ic / T::KG, v, ic, w, acc);
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) T::store32(m + (i * NV + j) * T::W, acc[i][j]);
}

// A panel's element sums for this many bytes at most at once (a chunk of the block's tiles):
// with 64-channel panels the whole block's (25 elements x tiles x 256 bytes) outgrew L2.
constexpr long kSumBytes = 192 * 1024;

template <class F, class X>
void run(const QConvParams& qp, const QConvArgs& a, pthreadpool_t pool) {
  using T = typename X::T;
  constexpr int kE = kElems<F>, kTile = F::kTile, MR = X::S::MR, NR = X::S::NR, NV = NR / T::W;
  static_assert(T::KG == 2 && NR % T::W == 0);
  const ConvParams& p = qp.conv;
  Ctx x{qp, a, p.src_stride ? p.src_stride : p.ic, p.dst_stride ? p.dst_stride : p.oc,
        p.res_stride ? p.res_stride : p.oc, grid<F, typename X::S>(p, long(pthreadpool_get_threads_count(pool)))};
  alignas(64) uint8_t tail[256];
  qigemm::attach_tail<T>(x.a.rq, tail);
  const long ic = p.ic, tb = winograd::block_max(x.g, MR);
  const long tc_max = std::max<long>(MR, kSumBytes / (long(kE) * NR * 4) / MR * MR);
  auto task = [&](std::size_t b, std::size_t gi) {
    const long t0 = winograd::block_start(x.g, long(b), MR);
    const int nt = int(winograd::block_start(x.g, long(b) + 1, MR) - t0);
    const long tc = std::min<long>(nt, tc_max);
    // Transformed input, one panel's element sums for a chunk of tiles, then their outputs.
    const std::size_t v_bytes = std::size_t(kE) * tb * ic * 2, m_bytes = std::size_t(kE) * tc * NR * 4;
    char* s = static_cast<char*>(thread_scratch(v_bytes + m_bytes + std::size_t(kTile * kTile) * tc * NR * 4));
    if (!s) std::abort();  // out of memory for a few MiB: nothing sensible is left to do
    int16_t* v = reinterpret_cast<int16_t*>(s);
    int32_t* m = reinterpret_cast<int32_t*>(s + v_bytes);
    int32_t* o = reinterpret_cast<int32_t*>(s + v_bytes + m_bytes);
    transform_input<F, X>(x, t0, nt, v);
    const int pn0 = int(gi * x.g.panels / x.g.groups), pn1 = int((gi + 1) * x.g.panels / x.g.groups);
    const int16_t* weights = static_cast<const int16_t*>(a.weights);
    const long panel_bytes = ic * NR * 2;
    for (int pn = pn0; pn < pn1; ++pn)
      for (long c0 = 0; c0 < nt; c0 += tc) {
        const int n = int(std::min<long>(tc, nt - c0));
        const long calls = qigemm::ceil_div(n, MR);
        for (int e = 0; e < kE; ++e) {
          const int16_t* w = weights + (long(e) * x.g.panels + pn) * ic * NR;
          // The next element's (or panel's) weights, into L2 a slice per GEMM tile while this
          // one's run, once per panel (the later chunks find them there): on small images (few
          // tiles per element) each element's first tile otherwise waits for memory (as in the
          // fp32 Winograd, conv_winograd.h). Not with 64-channel panels: a burst of prefetches
          // four times as long per tile stalled the GEMMs (~9% of a 256-channel conv).
          const bool more = NR <= 16 && (e + 1 < kE ? c0 == 0 : c0 + tc >= nt && pn + 1 < pn1);
          const long next = e + 1 < kE ? long(e + 1) * x.g.panels + pn : pn + 1;
          const char* nw = reinterpret_cast<const char*>(weights + next * ic * NR);
          for (int t = 0; t < n; t += MR) {
            if (more) {
              const long c = t / MR;
              for (long at = panel_bytes * c / calls / 64 * 64; at < panel_bytes * (c + 1) / calls; at += 64)
                _mm_prefetch(nw + at, _MM_HINT_T1);
            }
            gemm_rows<T, MR, NV>(std::min(MR, n - t), ic, v + (long(e) * nt + c0 + t) * ic, w,
                                 m + (long(e) * n + t) * NR);
          }
        }
        transform_output<F, X>(n, m, long(n) * NR, o);
        store_panel<F, X>(x, t0 + c0, n, pn, o);
      }
    lut_block<F>(x, t0, nt, long(pn0) * NR, long(pn1) * NR);
  };
  pthreadpool_parallelize_2d(pool, task, std::size_t(x.g.blocks), std::size_t(x.g.groups), kPoolFlags);
}

}  // namespace
}  // namespace systolic::kernels::qwinograd
