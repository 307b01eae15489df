// The int8 conv epilogue on 16 int32 lanes (AVX-512F): bias add, requantization to u8 or
// dequantization to float, in the family contract's order. Shared by the AVX512-VNNI traits and
// the AVX-512 depthwise kernel; include only from files built with AVX-512.
#pragma once
#include <immintrin.h>

#include <array>
#include <cstdint>
#include <utility>

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

  static __m512 rne_clamp(__m512 t, __m512 lo, __m512 hi) {
    return _mm512_roundscale_ps(_mm512_min_ps(_mm512_max_ps(t, lo), hi), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  // rne(min(max(t, lo), hi)) * s: one of the contract's mid steps.
  static __m512 grid(__m512 t, __m512 lo, __m512 hi, __m512 s) { return _mm512_mul_ps(rne_clamp(t, lo, hi), s); }

  // The steps from the scale to the final clamp (mid 1, the residual, mid 2), their constants
  // in registers (the loops over rows below hold one across rows).
  struct Steps {
    int mid;
    __m512 off, rsc, lo0, hi0, s0, lo1, hi1, s1;
    explicit Steps(const QRequant& rq)
        : mid(rq.mid), off(_mm512_set1_ps(res_off(rq))), rsc(_mm512_set1_ps(rq.res_scale)),
          lo0(_mm512_set1_ps(rq.mid_lo[0])), hi0(_mm512_set1_ps(rq.mid_hi[0])), s0(_mm512_set1_ps(rq.mid_scale[0])),
          lo1(_mm512_set1_ps(rq.mid_lo[1])), hi1(_mm512_set1_ps(rq.mid_hi[1])), s1(_mm512_set1_ps(rq.mid_scale[1])) {}
    // The scaled sums a, through mid 1 where kMid1, with the residual's constant where kRes.
    template <bool kRes, bool kMid1>
    __m512 scale(__m512 a, __m512 s) const {
      if constexpr (kMid1) {
        const __m512 q = rne_clamp(_mm512_mul_ps(a, s), lo0, hi0);
        return kRes ? _mm512_fmadd_ps(q, s0, off) : _mm512_mul_ps(q, s0);
      }
      return kRes ? _mm512_fmadd_ps(a, s, off) : _mm512_mul_ps(a, s);
    }
    // t plus the residual's bytes r8 times their scale (scale() added their constant).
    __m512 residual(__m512 t, __m128i r8) const {
      return _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(r8)), rsc, t);
    }
    // The sums a scaled, with the residual's bytes r8 where `res`, through mid 2.
    __m512 apply(__m512 a, __m512 s, bool res, __m128i r8) const {
      __m512 t;
      if (mid & 1) t = res ? scale<true, true>(a, s) : scale<false, true>(a, s);
      else t = res ? scale<true, false>(a, s) : scale<false, false>(a, s);
      if (res) t = residual(t, r8);
      if (mid & 2) t = grid(t, lo1, hi1, s1);
      return t;
    }
  };

  static void requant(V acc, const float* scale, const uint8_t* res, const QRequant& rq, uint8_t* dst) {
    // One vector: each constant is broadcast only on the branch that needs it.
    const __m512 off = _mm512_set1_ps(res ? res_off(rq) : 0.f);
    __m512 t = _mm512_cvtepi32_ps(acc);
    if (rq.mid & 1)
      t = _mm512_fmadd_ps(rne_clamp(_mm512_mul_ps(t, _mm512_loadu_ps(scale)), _mm512_set1_ps(rq.mid_lo[0]),
                                    _mm512_set1_ps(rq.mid_hi[0])),
                          _mm512_set1_ps(rq.mid_scale[0]), off);
    else t = _mm512_fmadd_ps(t, _mm512_loadu_ps(scale), off);
    if (res) {
      const __m512 r = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(res))));
      t = _mm512_fmadd_ps(r, _mm512_set1_ps(rq.res_scale), t);
    }
    if (rq.mid & 2)
      t = grid(t, _mm512_set1_ps(rq.mid_lo[1]), _mm512_set1_ps(rq.mid_hi[1]), _mm512_set1_ps(rq.mid_scale[1]));
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
    const Steps st(rq);
    for (int i = 0; i < rows; ++i) {
      const __m512 a = _mm512_cvtepi32_ps(_mm512_add_epi32(load32(c + i * ldc), b));
      // A plain residual load where the row is whole: on the Zen 5 measured, a masked byte load
      // that missed the cache stalled the 1x1 64->256 conv with a residual at batch 16 to half speed.
      const __m128i r8 = !res      ? _mm_setzero_si128()
                         : n >= W  ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(res + i * rs))
                                   : _mm_maskz_loadu_epi8(m, res + i * rs);
      __m512 t = st.apply(a, s, res != nullptr, r8);
      t = _mm512_min_ps(_mm512_max_ps(t, lo), hi);
      const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(t), zp);
      // q is in [0, 255]. A plain store where the row is whole, as for the residual: masked
      // stores that missed the cache ran the 1x1 64->256 conv at batch 16 16-36% slower.
      if (n >= W) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i * ds), _mm512_cvtepi32_epi8(q));
      else _mm_mask_storeu_epi8(dst + i * ds, m, _mm512_cvtepi32_epi8(q));
    }
  }

  // requant_rows() of four whole columns (64 channels) at once, bias added only where given
  // (the implicit GEMM starts its accumulators from it). A row's four vectors go to bytes through
  // saturating packs, the zero point added on int16: after the float clamp q + zp is in
  // [0, 255], where the packs change nothing, so the bytes are vpmovdb's; one 64-byte store. Where
  // the clamp's low bound is the u8 range's (-zp), the packs' saturation is that bound and the
  // float max goes; the min stays (cvtps2dq turns values past 2^31 negative). A ResNet-50
  // bottleneck end's epilogue (two QDQ roundings and a residual) has ~25 ops per vector against
  // 16 dot products at K = 64: every one counts.
  static constexpr bool kPackedRows = true;
  static constexpr int kPackedNV = 4;
  static void requant_rows_packed(const int32_t* c, long ldc, int rows, const int32_t* bias, const float* scale,
                             const uint8_t* res, long rs, const QRequant& rq, uint8_t* dst, long ds);

  using Rows64 = void (*)(const int32_t*, long, int, const int32_t*, const float*, const uint8_t*, long,
                          const QRequant&, uint8_t*, long);

  // Column j of row c (its residual bytes at r): the bias where kBias, the scale, mid 1 where
  // kMid1, the residual where kRes: the float before mid 2.
  template <bool kBias, bool kRes, bool kMid1>
  static __m512 scaled(const int32_t* c, int j, const __m512i (&b)[4], const __m512 (&s)[4], const uint8_t* r,
                       const Steps& st) {
    __m512i a = load32(c + j * W);
    if constexpr (kBias) a = _mm512_add_epi32(a, b[j]);
    const __m512 t = st.template scale<kRes, kMid1>(_mm512_cvtepi32_ps(a), s[j]);
    if constexpr (kRes) return st.residual(t, _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + j * W)));
    return t;
  }
  static void load_columns(const int32_t* bias, const float* scale, __m512i (&b)[4], __m512 (&s)[4]) {
    for (int j = 0; j < 4; ++j) {
      b[j] = bias ? _mm512_loadu_si512(bias + j * W) : _mm512_setzero_si512();
      s[j] = _mm512_loadu_ps(scale + j * W);
    }
  }
  // packs/packus interleave 128-bit lanes: dword 4L + v holds vector v's lane L.
  static __m512i lane_order() { return _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15); }

  // requant_rows_packed's loop for the steps in K: bit 0 the bias, 1 the residual, 2 the low clamp
  // (where it is not the u8 range's), 3-4 the roundings (QRequant::mid).
  template <int K>
  static void rows64(const int32_t* c, long ldc, int rows, const int32_t* bias, const float* scale,
                     const uint8_t* res, long rs, const QRequant& rq, uint8_t* dst, long ds) {
    constexpr bool kBias = K & 1, kRes = K & 2, kKeepLo = K & 4, kMid1 = K & 8, kMid2 = K & 16;
    __m512i b[4];
    __m512 s[4];
    load_columns(bias, scale, b, s);
    const __m512 lo = _mm512_set1_ps(rq.lo), hi = _mm512_set1_ps(rq.hi);
    const __m512i zp16 = _mm512_set1_epi16(int16_t(rq.zp));
    const __m512i order = lane_order();
    const Steps st(rq);
    for (int i = 0; i < rows; ++i) {
      __m512i q[4];
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        __m512 t = scaled<kBias, kRes, kMid1>(c + i * ldc, j, b, s, kRes ? res + i * rs : nullptr, st);
        if constexpr (kMid2) t = grid(t, st.lo1, st.hi1, st.s1);
        if constexpr (kKeepLo) t = _mm512_max_ps(t, lo);
        q[j] = _mm512_cvtps_epi32(_mm512_min_ps(t, hi));
      }
      const __m512i p01 = _mm512_adds_epi16(_mm512_packs_epi32(q[0], q[1]), zp16);
      const __m512i p23 = _mm512_adds_epi16(_mm512_packs_epi32(q[2], q[3]), zp16);
      _mm512_storeu_si512(dst + i * ds, _mm512_permutexvar_epi32(order, _mm512_packus_epi16(p01, p23)));
    }
  }

  // rows64() with the steps after mid 2's rounding looked up in rq.tail (QRequant): the
  // rounding's integers, less mid_lo[1], go to bytes through the same packs and index the 256-byte
  // table by two byte permutes over register pairs, the index's top bit choosing between them;
  // in place of mid 2's scale, the final clamp and rounding and the zero point (~4 of ~21 ops a
  // vector on a QDQ bottleneck end). Only where the drivers found AVX512-VBMI. K: bit 0 the bias,
  // 1 the residual, 2 mid 1.
  template <int K>
  __attribute__((target("avx512vbmi"))) static void rows64_tail(const int32_t* c, long ldc, int rows,
                                                               const int32_t* bias, const float* scale,
                                                               const uint8_t* res, long rs, const QRequant& rq,
                                                               uint8_t* dst, long ds) {
    constexpr bool kBias = K & 1, kRes = K & 2, kMid1 = K & 4;
    __m512i b[4];
    __m512 s[4];
    load_columns(bias, scale, b, s);
    const __m512 lo1 = _mm512_set1_ps(rq.mid_lo[1]), hi1 = _mm512_set1_ps(rq.mid_hi[1]);
    const __m512i base = _mm512_set1_epi16(int16_t(rq.mid_lo[1]));
    const __m512i order = lane_order();
    const __m512i t0 = _mm512_loadu_si512(rq.tail), t1 = _mm512_loadu_si512(rq.tail + 64);
    const __m512i t2 = _mm512_loadu_si512(rq.tail + 128), t3 = _mm512_loadu_si512(rq.tail + 192);
    const Steps st(rq);
    for (int i = 0; i < rows; ++i) {
      __m512i q[4];
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        const __m512 t = scaled<kBias, kRes, kMid1>(c + i * ldc, j, b, s, kRes ? res + i * rs : nullptr, st);
        q[j] = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(t, lo1), hi1));  // in [lo1, hi1]
      }
      // q - lo1 in [0, 255]: exact through the int16 packs (|lo1|, |hi1| <= 255).
      const __m512i p01 = _mm512_sub_epi16(_mm512_packs_epi32(q[0], q[1]), base);
      const __m512i p23 = _mm512_sub_epi16(_mm512_packs_epi32(q[2], q[3]), base);
      const __m512i idx = _mm512_permutexvar_epi32(order, _mm512_packus_epi16(p01, p23));
      const __m512i low = _mm512_permutex2var_epi8(t0, idx, t1), high = _mm512_permutex2var_epi8(t2, idx, t3);
      _mm512_storeu_si512(dst + i * ds, _mm512_mask_blend_epi8(_mm512_movepi8_mask(idx), low, high));
    }
  }

  template <int... K>
  static constexpr std::array<Rows64, sizeof...(K)> loops(std::integer_sequence<int, K...>) {
    return {&rows64<K>...};
  }
  template <int... K>
  static constexpr std::array<Rows64, sizeof...(K)> tail_loops(std::integer_sequence<int, K...>) {
    return {&rows64_tail<K>...};
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

// QEpilogueAvx512's loops by their steps, constant-initialized (no guard on each call).
inline constexpr std::array<QEpilogueAvx512::Rows64, 32> kQRows64Loops =
    QEpilogueAvx512::loops(std::make_integer_sequence<int, 32>{});
inline constexpr std::array<QEpilogueAvx512::Rows64, 8> kQRows64TailLoops =
    QEpilogueAvx512::tail_loops(std::make_integer_sequence<int, 8>{});

// One loop per combination of the epilogue's steps, chosen once per call: written with run-time
// tests, GCC kept a test and a branch per vector for each (the bias, the residual, both
// roundings, the low clamp) inside the loop.
inline void QEpilogueAvx512::requant_rows_packed(const int32_t* c, long ldc, int rows, const int32_t* bias,
                                            const float* scale, const uint8_t* res, long rs, const QRequant& rq,
                                            uint8_t* dst, long ds) {
  const int bits = (bias ? 1 : 0) | (res ? 2 : 0) | (rq.lo > float(-rq.zp) ? 4 : 0);
  if (rq.tail) return kQRows64TailLoops[(bits & 3) | (rq.mid & 1) << 2](c, ldc, rows, bias, scale, res, rs, rq, dst, ds);
  kQRows64Loops[bits | (rq.mid & 3) << 3](c, ldc, rows, bias, scale, res, rs, rq, dst, ds);
}

}  // namespace systolic::kernels
