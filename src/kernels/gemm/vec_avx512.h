// 16-lane fp32 vector ops (AVX-512F/BW/VL/DQ) for the shared kernel templates; include only from
// *_avx512.cc.
#pragma once
#include <immintrin.h>

namespace systolic::kernels {

struct VecAvx512 {
  using V = __m512;
  static constexpr int W = 16;
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static V bcast(const float* p) { return _mm512_set1_ps(*p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  // The all-lanes masked forms: the plain ones trip GCC 12's -Wmaybe-uninitialized.
  static V max(V a, V b) { return _mm512_mask_max_ps(a, 0xFFFF, a, b); }
  static V min(V a, V b) { return _mm512_mask_min_ps(a, 0xFFFF, a, b); }
  static V leaky(V x, V alpha) {
    return _mm512_mask_mul_ps(x, _mm512_cmp_ps_mask(x, zero(), _CMP_LT_OQ), x, alpha);
  }
  static __mmask16 mask(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
  static V load_n(const float* p, int n) { return _mm512_maskz_loadu_ps(mask(n), p); }
  static void store_n(float* p, V v, int n) { _mm512_mask_storeu_ps(p, mask(n), v); }
  static float hsum(V v) { return _mm512_reduce_add_ps(v); }
  // round and scale2 use the all-lanes masked forms (kAll): inlined into the conv tiles beside
  // round_bf16, the plain ones' undefined pass-through trips GCC 12's -Wmaybe-uninitialized.
  static constexpr __mmask16 kAll = 0xFFFF;
  // To the nearest integer, ties to even.
  static V round(V x) { return _mm512_maskz_roundscale_ps(kAll, x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // p * 2^n for integral n in [-150, 129] (kernels/vec_math.h's exp): two exact power-of-two
  // factors, so n = 128 overflows to inf and n = -150 reaches the denormals.
  static V scale2(V p, V n) {
    const __m512i ni = _mm512_maskz_cvtps_epi32(kAll, n), h = _mm512_maskz_srai_epi32(kAll, ni, 1);
    const __m512i bias = _mm512_set1_epi32(127);
    const V s1 = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll, _mm512_add_epi32(h, bias), 23));
    const V s2 = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll, _mm512_add_epi32(_mm512_sub_epi32(ni, h), bias), 23));
    return _mm512_mul_ps(_mm512_mul_ps(p, s1), s2);
  }
  // Each lane rounded to the nearest bf16, ties to even, NaN kept (kernels/epilogue.h round_bf16).
  // Six ops: bit 16 (the kept part's last bit) tested into a mask that adds the tie's one.
  static V round_bf16(V x) {
    const __m512i u = _mm512_castps_si512(x);
    __m512i r = _mm512_add_epi32(u, _mm512_set1_epi32(0x7FFF));
    r = _mm512_mask_add_epi32(r, _mm512_test_epi32_mask(u, _mm512_set1_epi32(0x10000)), r, _mm512_set1_epi32(1));
    r = _mm512_mask_or_epi32(r, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), u, _mm512_set1_epi32(0x00400000));
    return _mm512_castsi512_ps(_mm512_and_si512(r, _mm512_set1_epi32(int(0xFFFF0000u))));
  }
};

}  // namespace systolic::kernels
