// AVX2 int8 Winograd F(2x2, 3x3) conv run (qconv_winograd.h): input tiles transformed 16
// channels at a time as int16, the 16 element GEMMs on the AVX2 implicit-GEMM tile (6 tiles x
// 16 channels, vpmaddwd), then per panel the output transform, the shift by 2 and the direct
// kernels' requantizing epilogue over each tile row's pixels.
#include <algorithm>
#include <cstdlib>

#include "kernels/qconv/qconv_igemm.h"
#include "kernels/qconv/qconv_winograd.h"
#include "kernels/qconv/qvec_avx2.h"
#include "kernels/thread_scratch.h"

namespace systolic::kernels {
namespace {

using namespace qwinograd;
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

// r = B^T x along one side of the tile (B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]).
SYSTOLIC_INLINE void input_1d(__m256i x0, __m256i x1, __m256i x2, __m256i x3, __m256i (&r)[kIn]) {
  r[0] = _mm256_sub_epi16(x0, x2);
  r[1] = _mm256_add_epi16(x1, x2);
  r[2] = _mm256_sub_epi16(x2, x1);
  r[3] = _mm256_sub_epi16(x1, x3);
}

// v[e][t][c] (int16, rows of ic) for the block's tiles [t0, t0 + nt): each 4x4 patch's bytes
// (the pad bytes outside the image), B^T d B, 16 channels at a time.
void transform_input(const Ctx& x, long t0, int nt, int16_t* v) {
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
#pragma GCC unroll 4
      for (int i = 0; i < kIn; ++i) {
        __m256i d[kIn];
#pragma GCC unroll 4
        for (int j = 0; j < kIn; ++j) d[j] = px[i][j] ? widen16(px[i][j] + c) : pad;
        input_1d(d[0], d[1], d[2], d[3], u[i]);
      }
#pragma GCC unroll 4
      for (int j = 0; j < kIn; ++j) {  // B^T (d B), column by column
        __m256i r[kIn];
        input_1d(u[0][j], u[1][j], u[2][j], u[3][j], r);
#pragma GCC unroll 4
        for (int i = 0; i < kIn; ++i)
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(vt + (i * kIn + j) * estride + c), r[i]);
      }
    }
  }
}

// Per tile t of the block, o[py][t][px][NR] = (A^T m A) / 4 from m[e][t][NR] (A^T = [1 1 1 0;
// 0 1 -1 -1]): the window sums, bias not yet added; exact, every sum wraps in int32 to a
// multiple of 4 that fits.
void transform_output(int nt, const int32_t* m, int32_t* o) {
  const long estride = long(nt) * NR;
  for (int t = 0; t < nt; ++t)
    for (int j = 0; j < NR; j += T::W) {
      __m256i s[kIn][kTile];  // m A, row by row
#pragma GCC unroll 4
      for (int i = 0; i < kIn; ++i) {
        const int32_t* r = m + i * kIn * estride + long(t) * NR + j;
        const __m256i m0 = T::load32(r), m1 = T::load32(r + estride), m2 = T::load32(r + 2 * estride),
                      m3 = T::load32(r + 3 * estride);
        s[i][0] = _mm256_add_epi32(_mm256_add_epi32(m0, m1), m2);
        s[i][1] = _mm256_sub_epi32(_mm256_sub_epi32(m1, m2), m3);
      }
#pragma GCC unroll 2
      for (int q = 0; q < kTile; ++q) {  // A^T (m A), output column q
        const __m256i y0 = _mm256_add_epi32(_mm256_add_epi32(s[0][q], s[1][q]), s[2][q]);
        const __m256i y1 = _mm256_sub_epi32(_mm256_sub_epi32(s[1][q], s[2][q]), s[3][q]);
        T::store32(o + ((0 * nt + t) * kTile + q) * NR + j, _mm256_srai_epi32(y0, 2));
        T::store32(o + ((1 * nt + t) * kTile + q) * NR + j, _mm256_srai_epi32(y1, 2));
      }
    }
}

// The epilogue of one panel's outputs o (transform_output's layout): per run of the block's
// tiles in one tile row, each of its two output rows is a run of pixels.
void store_panel(const Ctx& x, long t0, int nt, int pn, const int32_t* o) {
  const ConvParams& p = x.qp.conv;
  const QConvArgs& a = x.a;
  const long per_img = long(x.g.tiles_y) * x.g.tiles_x;
  const long ch = long(pn) * NR;
  for (int t = 0; t < nt;) {
    const long tile = t0 + t, img = tile / per_img, rem = tile - img * per_img;
    const int ty = int(rem / x.g.tiles_x), tx = int(rem % x.g.tiles_x);
    const int run = std::min(nt - t, x.g.tiles_x - tx);
    const int ox0 = tx * kTile, npix = std::min(run * kTile, p.ow - ox0);
    for (int py = 0; py < kTile && ty * kTile + py < p.oh; ++py) {
      const long pix = (img * p.oh + ty * kTile + py) * p.ow + ox0;
      const int32_t* c = o + (long(py) * nt + t) * kTile * NR;
      for (int j = 0; j < NR; j += T::W) {
        const uint8_t* r = a.residual ? static_cast<const uint8_t*>(a.residual) + pix * x.rs + ch + j : nullptr;
        T::requant_rows(c + j, NR, npix, T::W, a.bias + ch + j, a.scale + ch + j, r, x.rs, a.rq,
                        static_cast<uint8_t*>(a.dst) + pix * x.ds + ch + j, x.ds);
      }
    }
    t += run;
  }
}

// The fused table over the pixels a task wrote, channels [c0, c1).
void lut_block(const Ctx& x, long t0, int nt, long c0, long c1) {
  const ConvParams& p = x.qp.conv;
  const QRequant& rq = x.a.rq;
  if (!rq.lut) return;
  const long per_img = long(x.g.tiles_y) * x.g.tiles_x;
  for (int t = 0; t < nt;) {
    const long tile = t0 + t, img = tile / per_img, rem = tile - img * per_img;
    const int ty = int(rem / x.g.tiles_x), tx = int(rem % x.g.tiles_x);
    const int run = std::min(nt - t, x.g.tiles_x - tx);
    const int ox0 = tx * kTile, npix = std::min(run * kTile, p.ow - ox0);
    for (int py = 0; py < kTile && ty * kTile + py < p.oh; ++py) {
      uint8_t* d = static_cast<uint8_t*>(x.a.dst) + ((img * p.oh + ty * kTile + py) * p.ow + ox0) * x.ds + c0;
      rq.lut_rows(rq.lut, d, x.ds, d, x.ds, c1 - c0, npix);
    }
    t += run;
  }
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

}  // namespace

void qconv_winograd_f2x3_avx2_run(const QConvParams& qp, const QConvArgs& a, pthreadpool_t pool) {
  const ConvParams& p = qp.conv;
  Ctx x{qp, a, p.src_stride ? p.src_stride : p.ic, p.dst_stride ? p.dst_stride : p.oc,
        p.res_stride ? p.res_stride : p.oc, grid(p, long(pthreadpool_get_threads_count(pool)))};
  const long tb = x.g.tb, ic = p.ic;
  auto task = [&](std::size_t b, std::size_t gi) {
    const long t0 = long(b) * tb;
    const int nt = int(std::min(tb, x.g.tiles - t0));
    // Transformed input, one panel's element sums, then its outputs.
    const std::size_t v_bytes = std::size_t(kElems) * tb * ic * 2, m_bytes = std::size_t(kElems) * tb * NR * 4;
    char* s = static_cast<char*>(thread_scratch(v_bytes + m_bytes + std::size_t(kTile * kTile) * tb * NR * 4));
    if (!s) std::abort();  // out of memory for a few MiB: nothing sensible is left to do
    int16_t* v = reinterpret_cast<int16_t*>(s);
    int32_t* m = reinterpret_cast<int32_t*>(s + v_bytes);
    int32_t* o = reinterpret_cast<int32_t*>(s + v_bytes + m_bytes);
    transform_input(x, t0, nt, v);
    const int pn0 = int(gi * x.g.panels / x.g.groups), pn1 = int((gi + 1) * x.g.panels / x.g.groups);
    const int16_t* weights = static_cast<const int16_t*>(a.weights);
    const long panel_bytes = ic * NR * 2, calls = qigemm::ceil_div(nt, MR);
    for (int pn = pn0; pn < pn1; ++pn) {
      for (int e = 0; e < kElems; ++e) {
        const int16_t* w = weights + (long(e) * x.g.panels + pn) * ic * NR;
        // The next element's (or panel's) weights, into L2 a slice per GEMM tile while this
        // one's run: on small images (few tiles per element) each element's first tile
        // otherwise waits for memory (as in the fp32 Winograd, conv_winograd.h).
        const bool more = e + 1 < kElems || pn + 1 < pn1;
        const char* nw = reinterpret_cast<const char*>(
            weights + (e + 1 < kElems ? long(e + 1) * x.g.panels + pn : pn + 1) * ic * NR);
        for (int t = 0; t < nt; t += MR) {
          if (more) {
            const long c = t / MR;
            for (long at = panel_bytes * c / calls / 64 * 64; at < panel_bytes * (c + 1) / calls; at += 64)
              _mm_prefetch(nw + at, _MM_HINT_T1);
          }
          gemm_rows<MR>(std::min(MR, nt - t), ic, v + (long(e) * nt + t) * ic, w, m + (long(e) * nt + t) * NR);
        }
      }
      transform_output(nt, m, o);
      store_panel(x, t0, nt, pn, o);
    }
    lut_block(x, t0, nt, long(pn0) * NR, long(pn1) * NR);
  };
  pthreadpool_parallelize_2d(pool, task, std::size_t(x.g.blocks), std::size_t(x.g.groups), kPoolFlags);
}

}  // namespace systolic::kernels
