// AVX2 int8 Winograd F(2x2, 3x3) and F(3x3, 3x3) conv runs (qconv_winograd.h): input tiles
// transformed 16 channels at a time as int16, the element GEMMs on the AVX2 implicit-GEMM tile
// (6 tiles x 16 channels, vpmaddwd), then per panel the output transform, the division by s^2
// and the direct kernels' requantizing epilogue over each tile row's pixels.
#include <algorithm>
#include <cstdlib>

#include "kernels/qconv/qconv_igemm.h"
#include "kernels/qconv/qconv_winograd.h"
#include "kernels/qconv/qvec_avx2.h"
#include "kernels/thread_scratch.h"

namespace systolic::kernels {
namespace {

using qwinograd::F2;
using qwinograd::F3;
using qwinograd::kElems;
using qwinograd::MR;
using qwinograd::NR;
using T = QVecAvx2;
constexpr int NV = NR / T::W;

struct Ctx {
  QConvParams qp;
  QConvArgs a;
  long ss, ds, rs;  // pixel strides
  winograd::Grid g;
};

SYSTOLIC_INLINE __m256i widen16(const uint8_t* p) {
  return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// r = B^T x along one side of the tile (qconv_winograd.h), int16 lanes.
SYSTOLIC_INLINE void input_1d(F2, const __m256i (&x)[4], __m256i (&r)[4]) {
  r[0] = _mm256_sub_epi16(x[0], x[2]);
  r[1] = _mm256_add_epi16(x[1], x[2]);
  r[2] = _mm256_sub_epi16(x[2], x[1]);
  r[3] = _mm256_sub_epi16(x[1], x[3]);
}
SYSTOLIC_INLINE void input_1d(F3, const __m256i (&x)[5], __m256i (&r)[5]) {
  const __m256i d31 = _mm256_sub_epi16(x[3], x[1]), d32 = _mm256_sub_epi16(x[3], x[2]);
  const __m256i d02 = _mm256_sub_epi16(x[0], x[2]), d12 = _mm256_sub_epi16(x[1], x[2]);
  const __m256i d13 = _mm256_sub_epi16(x[1], x[3]), d42 = _mm256_sub_epi16(x[4], x[2]);
  r[0] = _mm256_add_epi16(_mm256_add_epi16(d02, d02), d31);  // 2x0 - x1 - 2x2 + x3
  r[1] = _mm256_sub_epi16(d32, _mm256_add_epi16(x[1], x[1]));  // -2x1 - x2 + x3
  r[2] = _mm256_add_epi16(d32, _mm256_add_epi16(d12, d12));    // 2x1 - 3x2 + x3
  r[3] = d31;                                                  // -x1 + x3
  r[4] = _mm256_add_epi16(_mm256_add_epi16(d13, d13), d42);    // 2x1 - x2 - 2x3 + x4
}

// y = A^T m along one side, int32 lanes.
SYSTOLIC_INLINE void output_1d(F2, const __m256i (&m)[4], __m256i (&y)[2]) {
  y[0] = _mm256_add_epi32(_mm256_add_epi32(m[0], m[1]), m[2]);
  y[1] = _mm256_sub_epi32(_mm256_sub_epi32(m[1], m[2]), m[3]);
}
SYSTOLIC_INLINE void output_1d(F3, const __m256i (&m)[5], __m256i (&y)[3]) {
  const __m256i s12 = _mm256_add_epi32(m[1], m[2]), d12 = _mm256_sub_epi32(m[1], m[2]);
  const __m256i m3x2 = _mm256_add_epi32(m[3], m[3]);
  y[0] = _mm256_add_epi32(_mm256_add_epi32(m[0], s12), m[3]);                       // m0 + m1 + m2 + m3
  y[1] = _mm256_add_epi32(d12, m3x2);                                              // m1 - m2 + 2m3
  y[2] = _mm256_add_epi32(_mm256_add_epi32(s12, _mm256_add_epi32(m3x2, m3x2)), m[4]);  // m1 + m2 + 4m3 + m4
}

// The window sums from s^2 x them (mod 2^32): the odd factor's inverse, then the shift by 2.
template <class F>
SYSTOLIC_INLINE __m256i unscale(__m256i y) {
  if constexpr (F::kOdd != 1) {
    constexpr uint32_t inv = [] {  // Newton's iteration for the inverse mod 2^32
      uint32_t v = F::kOdd;
      for (int i = 0; i < 5; ++i) v *= 2u - F::kOdd * v;
      return v;
    }();
    static_assert(uint32_t(F::kOdd * inv) == 1u);
    y = _mm256_mullo_epi32(y, _mm256_set1_epi32(int32_t(inv)));
  }
  return _mm256_srai_epi32(y, 2);
}

// v[e][t][c] (int16, rows of ic) for the block's tiles [t0, t0 + nt): each patch's bytes (the
// pad bytes outside the image), B^T d B, 16 channels at a time.
template <class F>
void transform_input(const Ctx& x, long t0, int nt, int16_t* v) {
  constexpr int kTile = F::kTile, kIn = F::kIn;
  const ConvParams& p = x.qp.conv;
  const long per_img = long(x.g.tiles_y) * x.g.tiles_x, estride = long(nt) * p.ic;
  for (int t = 0; t < nt; ++t) {
    const long tile = t0 + t, img = tile / per_img, rem = tile - img * per_img;
    const int iy0 = int(rem / x.g.tiles_x) * kTile - p.pad_t, ix0 = int(rem % x.g.tiles_x) * kTile - p.pad_l;
    const uint8_t* px[kIn][kIn];  // each patch pixel's first channel, or null outside the image
    for (int i = 0; i < kIn; ++i)
      for (int j = 0; j < kIn; ++j) {
        const int iy = iy0 + i, ix = ix0 + j;
        px[i][j] = unsigned(iy) < unsigned(p.ih) && unsigned(ix) < unsigned(p.iw)
                       ? x.a.src + ((img * p.ih + iy) * p.iw + ix) * x.ss
                       : nullptr;
      }
    int16_t* vt = v + long(t) * p.ic;
    for (int c = 0; c < p.ic; c += 16) {
      const __m256i pad = widen16(x.a.pad + c);
      __m256i u[kIn][kIn];  // d B, row by row
#pragma GCC unroll 5
      for (int i = 0; i < kIn; ++i) {
        __m256i d[kIn];
#pragma GCC unroll 5
        for (int j = 0; j < kIn; ++j) d[j] = px[i][j] ? widen16(px[i][j] + c) : pad;
        input_1d(F{}, d, u[i]);
      }
#pragma GCC unroll 5
      for (int j = 0; j < kIn; ++j) {  // B^T (d B), column by column
        __m256i col[kIn], r[kIn];
#pragma GCC unroll 5
        for (int i = 0; i < kIn; ++i) col[i] = u[i][j];
        input_1d(F{}, col, r);
#pragma GCC unroll 5
        for (int i = 0; i < kIn; ++i)
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(vt + (i * kIn + j) * estride + c), r[i]);
      }
    }
  }
}

// Per tile t of the block, o[py][t][px][NR] = (A^T m A) / s^2 from m[e][t][NR]: the window
// sums, bias not yet added; exact (qconv_winograd.h).
template <class F>
void transform_output(int nt, const int32_t* m, int32_t* o) {
  constexpr int kTile = F::kTile, kIn = F::kIn;
  const long estride = long(nt) * NR;
  for (int t = 0; t < nt; ++t)
    for (int j = 0; j < NR; j += T::W) {
      __m256i s[kIn][kTile];  // m A, row by row
#pragma GCC unroll 5
      for (int i = 0; i < kIn; ++i) {
        const int32_t* r = m + i * kIn * estride + long(t) * NR + j;
        __m256i row[kIn];
#pragma GCC unroll 5
        for (int q = 0; q < kIn; ++q) row[q] = T::load32(r + q * estride);
        output_1d(F{}, row, s[i]);
      }
#pragma GCC unroll 3
      for (int q = 0; q < kTile; ++q) {  // A^T (m A), output column q
        __m256i col[kIn], y[kTile];
#pragma GCC unroll 5
        for (int i = 0; i < kIn; ++i) col[i] = s[i][q];
        output_1d(F{}, col, y);
#pragma GCC unroll 3
        for (int py = 0; py < kTile; ++py) T::store32(o + ((py * nt + t) * kTile + q) * NR + j, unscale<F>(y[py]));
      }
    }
}

// f(t, py, pix, npix) for each output row py of each run of the block's tiles that lies in one
// tile row (t its first tile): that row's outputs are npix pixels from pixel index pix on.
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

// The epilogue of one panel's outputs o (transform_output's layout), a row of a run at a time.
template <class F>
void store_panel(const Ctx& x, long t0, int nt, int pn, const int32_t* o) {
  const QConvArgs& a = x.a;
  const long ch = long(pn) * NR;
  for_each_row_run<F>(x, t0, nt, [&](int t, int py, long pix, int npix) {
    const int32_t* c = o + (long(py) * nt + t) * F::kTile * NR;
    for (int j = 0; j < NR; j += T::W) {
      const uint8_t* r = a.residual ? static_cast<const uint8_t*>(a.residual) + pix * x.rs + ch + j : nullptr;
      T::requant_rows(c + j, NR, npix, T::W, a.bias + ch + j, a.scale + ch + j, r, x.rs, a.rq,
                      static_cast<uint8_t*>(a.dst) + pix * x.ds + ch + j, x.ds);
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

// m[e][t0 + i][NR] for R tiles of one element: the igemm tile over the transformed rows.
template <int R>
void gemm_rows(int rows, long ic, const int16_t* v, const int16_t* w, int32_t* m) {
  if constexpr (R > 1)
    if (rows < R) return gemm_rows<R - 1>(rows, ic, v, w, m);
  T::V acc[R][NV];
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 2
    for (int j = 0; j < NV; ++j) acc[i][j] = T::zero();
  qigemm::dot_tile<T, R, NV>(ic / T::KG, v, ic, w, acc);
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 2
    for (int j = 0; j < NV; ++j) T::store32(m + i * NR + j * T::W, acc[i][j]);
}

template <class F>
void run(const QConvParams& qp, const QConvArgs& a, pthreadpool_t pool) {
  constexpr int kE = kElems<F>, kTile = F::kTile;
  const ConvParams& p = qp.conv;
  Ctx x{qp, a, p.src_stride ? p.src_stride : p.ic, p.dst_stride ? p.dst_stride : p.oc,
        p.res_stride ? p.res_stride : p.oc, qwinograd::grid<F>(p, long(pthreadpool_get_threads_count(pool)))};
  const long tb = x.g.tb, ic = p.ic;
  auto task = [&](std::size_t b, std::size_t gi) {
    const long t0 = long(b) * tb;
    const int nt = int(std::min(tb, x.g.tiles - t0));
    // Transformed input, one panel's element sums, then its outputs.
    const std::size_t v_bytes = std::size_t(kE) * tb * ic * 2, m_bytes = std::size_t(kE) * tb * NR * 4;
    char* s = static_cast<char*>(thread_scratch(v_bytes + m_bytes + std::size_t(kTile * kTile) * tb * NR * 4));
    if (!s) std::abort();  // out of memory for a few MiB: nothing sensible is left to do
    int16_t* v = reinterpret_cast<int16_t*>(s);
    int32_t* m = reinterpret_cast<int32_t*>(s + v_bytes);
    int32_t* o = reinterpret_cast<int32_t*>(s + v_bytes + m_bytes);
    transform_input<F>(x, t0, nt, v);
    const int pn0 = int(gi * x.g.panels / x.g.groups), pn1 = int((gi + 1) * x.g.panels / x.g.groups);
    const int16_t* weights = static_cast<const int16_t*>(a.weights);
    const long panel_bytes = ic * NR * 2, calls = qigemm::ceil_div(nt, MR);
    for (int pn = pn0; pn < pn1; ++pn) {
      for (int e = 0; e < kE; ++e) {
        const int16_t* w = weights + (long(e) * x.g.panels + pn) * ic * NR;
        // The next element's (or panel's) weights, into L2 a slice per GEMM tile while this
        // one's run: on small images (few tiles per element) each element's first tile
        // otherwise waits for memory (as in the fp32 Winograd, conv_winograd.h).
        const bool more = e + 1 < kE || pn + 1 < pn1;
        const char* nw = reinterpret_cast<const char*>(
            weights + (e + 1 < kE ? long(e + 1) * x.g.panels + pn : pn + 1) * ic * NR);
        for (int t = 0; t < nt; t += MR) {
          if (more) {
            const long c = t / MR;
            for (long at = panel_bytes * c / calls / 64 * 64; at < panel_bytes * (c + 1) / calls; at += 64)
              _mm_prefetch(nw + at, _MM_HINT_T1);
          }
          gemm_rows<MR>(std::min(MR, nt - t), ic, v + (long(e) * nt + t) * ic, w, m + (long(e) * nt + t) * NR);
        }
      }
      transform_output<F>(nt, m, o);
      store_panel<F>(x, t0, nt, pn, o);
    }
    lut_block<F>(x, t0, nt, long(pn0) * NR, long(pn1) * NR);
  };
  pthreadpool_parallelize_2d(pool, task, std::size_t(x.g.blocks), std::size_t(x.g.groups), kPoolFlags);
}

}  // namespace

void qconv_winograd_f2x3_avx2_run(const QConvParams& qp, const QConvArgs& a, pthreadpool_t pool) {
  run<F2>(qp, a, pool);
}

void qconv_winograd_f3x3_avx2_run(const QConvParams& qp, const QConvArgs& a, pthreadpool_t pool) {
  run<F3>(qp, a, pool);
}

}  // namespace systolic::kernels
