// AVX-512 (16-lane) element-wise kernel: the segment loops of eltwise_impl.h over __m512.
#include <immintrin.h>

// GCC 12 flags the _mm512_undefined_*() pass-through operand of unmasked intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include "kernels/eltwise/eltwise_impl.h"
#include "kernels/gemm/vec_avx512.h"

namespace systolic::kernels {
namespace {

struct V16 {
  using V = __m512;
  static constexpr int W = 16;
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static __mmask16 mask(int n) { return __mmask16((1u << n) - 1); }
  static V load_n(const float* p, int n) { return _mm512_maskz_loadu_ps(mask(n), p); }
  static void store_n(float* p, V v, int n) { _mm512_mask_storeu_ps(p, mask(n), v); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V min(V a, V b) { return _mm512_min_ps(a, b); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }
  static V lt_select(V a, V b, V x, V y) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, b, _CMP_LT_OQ), y, x); }
  static V abs(V x) { return _mm512_abs_ps(x); }
  static V copysign(V mag, V s) {
    const __m512i sign = _mm512_set1_epi32(int(0x80000000u));
    // (sign & s) | (~sign & mag)
    return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(sign, _mm512_castps_si512(s), _mm512_castps_si512(mag), 0xCA));
  }
  static V round(V x) { return VecAvx512::round(x); }
  static V round_bf16(V x) { return VecAvx512::round_bf16(x); }
  static V scale2(V p, V n) { return VecAvx512::scale2(p, n); }
};

}  // namespace

void eltwise_avx512_run(const EltwiseParams& p, const float* a, const float* b, float* y, pthreadpool_t pool) {
  eltwise::run<V16>(p, a, b, y, pool);
}

}  // namespace systolic::kernels
