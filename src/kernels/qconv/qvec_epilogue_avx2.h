// The int8 conv epilogue on 8 int32 lanes (AVX2): bias add, requantization to u8 or
// dequantization to float, in the family contract's order. Shared by the AVX2 and AVX-VNNI
// traits; include only from files built with AVX2.
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "kernels/epilogue.h"
#include "kernels/qconv/qconv.h"

namespace systolic::kernels {

void apply_act_n(const Epilogue& e, float* x, int n);

struct QEpilogueAvx2 {
  using V = __m256i;
  static constexpr int W = 8;
  static V zero() { return _mm256_setzero_si256(); }
  static V load32(const int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static void store32(int32_t* p, V v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }
  static V add32(V a, V b) { return _mm256_add_epi32(a, b); }

  // rne(min(max(t, lo), hi)) * s (+ off): one of the contract's mid steps.
  static __m256 rne_clamp(__m256 t, __m256 lo, __m256 hi) {
    return _mm256_round_ps(_mm256_min_ps(_mm256_max_ps(t, lo), hi), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  static __m256 mid(__m256 t, const QRequant& rq, int m) {
    return _mm256_mul_ps(rne_clamp(t, _mm256_set1_ps(rq.mid_lo[m]), _mm256_set1_ps(rq.mid_hi[m])),
                         _mm256_set1_ps(rq.mid_scale[m]));
  }

  static void requant(V acc, const float* scale, const uint8_t* res, const QRequant& rq, uint8_t* dst) {
    const __m256 off = _mm256_set1_ps(res ? res_off(rq) : 0.f);
    __m256 t = _mm256_cvtepi32_ps(acc);
    if (rq.mid & 1)
      t = _mm256_fmadd_ps(rne_clamp(_mm256_mul_ps(t, _mm256_loadu_ps(scale)), _mm256_set1_ps(rq.mid_lo[0]),
                                    _mm256_set1_ps(rq.mid_hi[0])),
                          _mm256_set1_ps(rq.mid_scale[0]), off);
    else t = _mm256_fmadd_ps(t, _mm256_loadu_ps(scale), off);
    if (res) {
      const __m256 r = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(res))));
      t = _mm256_fmadd_ps(r, _mm256_set1_ps(rq.res_scale), t);
    }
    if (rq.mid & 2) t = mid(t, rq, 1);
    t = _mm256_min_ps(_mm256_max_ps(t, _mm256_set1_ps(rq.lo)), _mm256_set1_ps(rq.hi));
    const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(t), _mm256_set1_epi32(rq.zp));
    const __m128i w16 = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), _mm_packus_epi16(w16, w16));
  }

  // requant() of c[i * ldc] + bias for `rows` rows of one full vector column, with the bias,
  // scales and constants held in registers: dst is bytes, so inside a per-row call every store
  // may alias them and the compiler reloads all of them for each row (half the epilogue's time
  // on short windows). Row i reads res + i * rs and writes dst + i * ds.
  static constexpr bool kMaskedTail = false;  // n is always W
  static void requant_rows(const int32_t* c, long ldc, int rows, int n, const int32_t* bias, const float* scale,
                           const uint8_t* res, long rs, const QRequant& rq, uint8_t* dst, long ds) {
    const V b = load32(bias);
    const __m256 s = _mm256_loadu_ps(scale), lo = _mm256_set1_ps(rq.lo), hi = _mm256_set1_ps(rq.hi);
    const __m256i zp = _mm256_set1_epi32(rq.zp);
    const __m256 off = _mm256_set1_ps(res ? res_off(rq) : 0.f), rsc = _mm256_set1_ps(rq.res_scale);
    const int mid = rq.mid;
    const __m256 m_lo0 = _mm256_set1_ps(rq.mid_lo[0]), m_hi0 = _mm256_set1_ps(rq.mid_hi[0]), m_s0 = _mm256_set1_ps(rq.mid_scale[0]);
    const __m256 m_lo1 = _mm256_set1_ps(rq.mid_lo[1]), m_hi1 = _mm256_set1_ps(rq.mid_hi[1]), m_s1 = _mm256_set1_ps(rq.mid_scale[1]);
    for (int i = 0; i < rows; ++i) {
      __m256 t = _mm256_cvtepi32_ps(_mm256_add_epi32(load32(c + i * ldc), b));
      if (mid & 1) t = _mm256_fmadd_ps(rne_clamp(_mm256_mul_ps(t, s), m_lo0, m_hi0), m_s0, off);
      else t = _mm256_fmadd_ps(t, s, off);
      if (res) {
        const __m128i r8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(res + i * rs));
        t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(r8)), rsc, t);
      }
      if (mid & 2) t = _mm256_mul_ps(rne_clamp(t, m_lo1, m_hi1), m_s1);
      t = _mm256_min_ps(_mm256_max_ps(t, lo), hi);
      const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(t), zp);
      const __m128i w16 = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + i * ds), _mm_packus_epi16(w16, w16));
    }
  }

  static void dequant(V acc, const float* scale, const float* res, const Epilogue& ep, float* dst) {
    __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), _mm256_loadu_ps(scale));
    if (res) t = _mm256_add_ps(t, _mm256_loadu_ps(res));
    switch (ep.act) {
      case Act::none: break;
      case Act::relu: t = _mm256_max_ps(t, _mm256_setzero_ps()); break;
      case Act::clip: t = _mm256_min_ps(_mm256_max_ps(t, _mm256_set1_ps(ep.a)), _mm256_set1_ps(ep.b)); break;
      default:
        _mm256_storeu_ps(dst, t);
        apply_act_n(ep, dst, W);
        return;
    }
    _mm256_storeu_ps(dst, t);
  }
};

}  // namespace systolic::kernels
