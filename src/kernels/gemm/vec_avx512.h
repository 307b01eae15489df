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
};

}  // namespace systolic::kernels
