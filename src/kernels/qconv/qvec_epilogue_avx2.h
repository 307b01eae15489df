// The int8 conv epilogue on 8 int32 lanes (AVX2): bias add, requantization to u8 or
// dequantization to float, in the family contract's order. Shared by the AVX2 and AVX-VNNI
// traits; include only from files built with AVX2.
#pragma once
#include <immintrin.h>

#include <array>
#include <cstdint>
#include <utility>

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

  // requant_rows() of two whole columns (16 channels) at once, bias added only where given (the
  // implicit GEMM starts its accumulators from it): the two vectors go to bytes through
  // saturating packs with the zero point added on int16, as QEpilogueAvx512's four-column form
  // does (see there: where the clamp's low bound is the u8 range's the packs' saturation is it),
  // one vpermd and one 16-byte store. Per-vector packs and the run-time step tests were half of
  // a ResNet-50 1x1 64->256 conv's epilogue.
  static constexpr bool kPackedRows = true;
  static constexpr int kPackedNV = 2;
  static void requant_rows_packed(const int32_t* c, long ldc, int rows, const int32_t* bias, const float* scale,
                                  const uint8_t* res, long rs, const QRequant& rq, uint8_t* dst, long ds);
  using RowsPacked = void (*)(const int32_t*, long, int, const int32_t*, const float*, const uint8_t*, long,
                              const QRequant&, uint8_t*, long);

  // requant_rows_packed's loop for the steps in K: bit 0 the bias, 1 the residual, 2 the low
  // clamp (where it is not the u8 range's), 3-4 the roundings (QRequant::mid).
  template <int K>
  static void rows16(const int32_t* c, long ldc, int rows, const int32_t* bias, const float* scale,
                     const uint8_t* res, long rs, const QRequant& rq, uint8_t* dst, long ds) {
    constexpr bool kBias = K & 1, kRes = K & 2, kKeepLo = K & 4, kMid1 = K & 8, kMid2 = K & 16;
    V b[2];
    __m256 s[2];
    for (int j = 0; j < 2; ++j) {
      b[j] = kBias ? load32(bias + j * W) : zero();
      s[j] = _mm256_loadu_ps(scale + j * W);
    }
    const __m256 lo = _mm256_set1_ps(rq.lo), hi = _mm256_set1_ps(rq.hi);
    const __m256 off = _mm256_set1_ps(res_off(rq)), rsc = _mm256_set1_ps(rq.res_scale);
    const __m256 m_lo0 = _mm256_set1_ps(rq.mid_lo[0]), m_hi0 = _mm256_set1_ps(rq.mid_hi[0]), m_s0 = _mm256_set1_ps(rq.mid_scale[0]);
    const __m256 m_lo1 = _mm256_set1_ps(rq.mid_lo[1]), m_hi1 = _mm256_set1_ps(rq.mid_hi[1]), m_s1 = _mm256_set1_ps(rq.mid_scale[1]);
    const __m256i zp16 = _mm256_set1_epi16(int16_t(rq.zp));
    // packs interleave 128-bit lanes: dword 2L + v holds vector v's lane L (four bytes each).
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int i = 0; i < rows; ++i) {
      V q[2];
#pragma GCC unroll 2
      for (int j = 0; j < 2; ++j) {
        V a = load32(c + i * ldc + j * W);
        if constexpr (kBias) a = add32(a, b[j]);
        __m256 t = _mm256_cvtepi32_ps(a);
        if constexpr (kMid1) {
          t = rne_clamp(_mm256_mul_ps(t, s[j]), m_lo0, m_hi0);
          t = kRes ? _mm256_fmadd_ps(t, m_s0, off) : _mm256_mul_ps(t, m_s0);
        } else {
          t = kRes ? _mm256_fmadd_ps(t, s[j], off) : _mm256_mul_ps(t, s[j]);
        }
        if constexpr (kRes) {
          const __m128i r8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(res + i * rs + j * W));
          t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(r8)), rsc, t);
        }
        if constexpr (kMid2) t = _mm256_mul_ps(rne_clamp(t, m_lo1, m_hi1), m_s1);
        if constexpr (kKeepLo) t = _mm256_max_ps(t, lo);
        q[j] = _mm256_cvtps_epi32(_mm256_min_ps(t, hi));
      }
      const __m256i p = _mm256_adds_epi16(_mm256_packs_epi32(q[0], q[1]), zp16);
      const __m256i u = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(p, p), order);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i * ds), _mm256_castsi256_si128(u));
    }
  }
  template <int... K>
  static constexpr std::array<RowsPacked, sizeof...(K)> loops(std::integer_sequence<int, K...>) {
    return {&rows16<K>...};
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

// QEpilogueAvx2's loops by their steps, constant-initialized (no guard on each call).
inline constexpr std::array<QEpilogueAvx2::RowsPacked, 32> kQRows16Loops =
    QEpilogueAvx2::loops(std::make_integer_sequence<int, 32>{});

inline void QEpilogueAvx2::requant_rows_packed(const int32_t* c, long ldc, int rows, const int32_t* bias,
                                               const float* scale, const uint8_t* res, long rs, const QRequant& rq,
                                               uint8_t* dst, long ds) {
  const int bits = (bias ? 1 : 0) | (res ? 2 : 0) | (rq.lo > float(-rq.zp) ? 4 : 0) | (rq.mid & 3) << 3;
  kQRows16Loops[bits](c, ldc, rows, bias, scale, res, rs, rq, dst, ds);
}

}  // namespace systolic::kernels
