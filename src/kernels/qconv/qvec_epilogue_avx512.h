// The int8 conv epilogue on 16 int32 lanes (AVX-512F): bias add, requantization to u8 or
// dequantization to float, in the family contract's order. Shared by the AVX512-VNNI traits and
// the AVX-512 depthwise kernel; include only from files built with AVX-512.
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "kernels/epilogue.h"
#include "kernels/qconv/qconv.h"

namespace systolic::kernels {

void apply_act_n(const Epilogue& e, float* x, int n);

struct QEpilogueAvx512 {
  using V = __m512i;
  static constexpr int W = 16;
  static V zero() { return _mm512_setzero_si512(); }
  static V load32(const int32_t* p) { return _mm512_loadu_si512(p); }
  static void store32(int32_t* p, V v) { _mm512_storeu_si512(p, v); }
  static V add32(V a, V b) { return _mm512_add_epi32(a, b); }

  // rne(min(max(t, lo), hi)) * s: one of the contract's mid steps.
  static __m512 mid(__m512 t, const QRequant& rq, int m) {
    t = _mm512_min_ps(_mm512_max_ps(t, _mm512_set1_ps(rq.mid_lo[m])), _mm512_set1_ps(rq.mid_hi[m]));
    return _mm512_mul_ps(_mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC),
                         _mm512_set1_ps(rq.mid_scale[m]));
  }

  static void requant(V acc, const float* scale, const uint8_t* res, const QRequant& rq, uint8_t* dst) {
    __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), _mm512_loadu_ps(scale));
    if (rq.mid & 1) t = mid(t, rq, 0);
    if (res) {
      const __m512 r = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(res))));
      t = _mm512_add_ps(t,
                        _mm512_mul_ps(_mm512_sub_ps(r, _mm512_set1_ps(float(rq.res_zp))), _mm512_set1_ps(rq.res_scale)));
    }
    if (rq.mid & 2) t = mid(t, rq, 1);
    t = _mm512_min_ps(_mm512_max_ps(t, _mm512_set1_ps(rq.lo)), _mm512_set1_ps(rq.hi));
    const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(t), _mm512_set1_epi32(rq.zp));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), _mm512_cvtepi32_epi8(q));  // q is in [0, 255]
  }

  // requant() of c[i * ldc] + bias for `rows` rows of one vector column of n lanes, the
  // constants in registers (per-row calls reload them: every byte store may alias them).
  // n < W lanes go through masked loads and stores (the same arithmetic per lane).
  static constexpr bool kMaskedTail = true;
  static void requant_rows(const int32_t* c, long ldc, int rows, int n, const int32_t* bias, const float* scale,
                           const uint8_t* res, long rs, const QRequant& rq, uint8_t* dst, long ds) {
    const __mmask16 m = n >= W ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
    const V b = _mm512_maskz_loadu_epi32(m, bias);
    const __m512 s = _mm512_maskz_loadu_ps(m, scale), lo = _mm512_set1_ps(rq.lo), hi = _mm512_set1_ps(rq.hi);
    const __m512i zp = _mm512_set1_epi32(rq.zp);
    const __m512 rzp = _mm512_set1_ps(float(rq.res_zp)), rsc = _mm512_set1_ps(rq.res_scale);
    const int mid = rq.mid;
    const __m512 m_lo0 = _mm512_set1_ps(rq.mid_lo[0]), m_hi0 = _mm512_set1_ps(rq.mid_hi[0]), m_s0 = _mm512_set1_ps(rq.mid_scale[0]);
    const __m512 m_lo1 = _mm512_set1_ps(rq.mid_lo[1]), m_hi1 = _mm512_set1_ps(rq.mid_hi[1]), m_s1 = _mm512_set1_ps(rq.mid_scale[1]);
    auto step = [](__m512 t, __m512 l, __m512 h, __m512 sc) {
      t = _mm512_min_ps(_mm512_max_ps(t, l), h);
      return _mm512_mul_ps(_mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), sc);
    };
    for (int i = 0; i < rows; ++i) {
      __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_add_epi32(load32(c + i * ldc), b)), s);
      if (mid & 1) t = step(t, m_lo0, m_hi0, m_s0);
      if (res) {
        // A plain load where the row is whole: on the Zen 5 measured, a masked byte load that
        // missed the cache stalled the 1x1 64->256 conv with a residual at batch 16 to half speed.
        const __m128i r8 = n >= W ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(res + i * rs))
                                  : _mm_maskz_loadu_epi8(m, res + i * rs);
        t = _mm512_add_ps(t, _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(r8)), rzp), rsc));
      }
      if (mid & 2) t = step(t, m_lo1, m_hi1, m_s1);
      t = _mm512_min_ps(_mm512_max_ps(t, lo), hi);
      const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(t), zp);
      // q is in [0, 255]. A plain store where the row is whole, as for the residual: masked
      // stores that missed the cache ran the 1x1 64->256 conv at batch 16 16-36% slower.
      if (n >= W) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i * ds), _mm512_cvtepi32_epi8(q));
      else _mm_mask_storeu_epi8(dst + i * ds, m, _mm512_cvtepi32_epi8(q));
    }
  }

  static void dequant(V acc, const float* scale, const float* res, const Epilogue& ep, float* dst) {
    __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(acc), _mm512_loadu_ps(scale));
    if (res) t = _mm512_add_ps(t, _mm512_loadu_ps(res));
    switch (ep.act) {
      case Act::none: break;
      case Act::relu: t = _mm512_max_ps(t, _mm512_setzero_ps()); break;
      case Act::clip: t = _mm512_min_ps(_mm512_max_ps(t, _mm512_set1_ps(ep.a)), _mm512_set1_ps(ep.b)); break;
      default:
        _mm512_storeu_ps(dst, t);
        apply_act_n(ep, dst, W);
        return;
    }
    _mm512_storeu_ps(dst, t);
  }
};

}  // namespace systolic::kernels
