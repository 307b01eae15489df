// AVX-512 (16-lane) softmax / layer normalization run.
#include "kernels/gemm/vec_avx512.h"
#include "kernels/norm/norm_impl.h"

namespace systolic::kernels {

namespace {

// The all-lanes masked forms: the plain ones trip GCC 12's -Wmaybe-uninitialized.
struct NormAvx512 : VecAvx512 {
  static V round(V x) { return _mm512_maskz_roundscale_ps(0xFFFF, x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static V pow2(V n) {
    const __m512i e = _mm512_add_epi32(_mm512_maskz_cvtps_epi32(0xFFFF, n), _mm512_set1_epi32(127));
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, e, 23));
  }
  static float hsum(V v) {
    const __m256 lo = _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xF, _mm512_castps_pd(v), 0));
    const __m256 hi = _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xF, _mm512_castps_pd(v), 1));
    const __m256 s8 = _mm256_add_ps(lo, hi);
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};

}  // namespace

void norm_avx512_run(const NormParams& p, const float* x, const float* scale, const float* bias, float* y,
                     pthreadpool_t pool) {
  norm::run<NormAvx512>(p, x, scale, bias, y, pool);
}

}  // namespace systolic::kernels
