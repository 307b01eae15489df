// AVX2+FMA (8-lane) element-wise kernel: the segment loops of eltwise_impl.h over __m256.
#include <immintrin.h>

#include "kernels/eltwise/eltwise_impl.h"
#include "kernels/gemm/vec_avx2.h"

namespace systolic::kernels {
namespace {

struct V8 {
  using V = __m256;
  static constexpr int W = 8;
  static V zero() { return _mm256_setzero_ps(); }
  static V set1(float x) { return _mm256_set1_ps(x); }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static __m256i mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static V load_n(const float* p, int n) { return _mm256_maskload_ps(p, mask(n)); }
  static void store_n(float* p, V v, int n) { _mm256_maskstore_ps(p, mask(n), v); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static V div(V a, V b) { return _mm256_div_ps(a, b); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V min(V a, V b) { return _mm256_min_ps(a, b); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }
  static V lt_select(V a, V b, V x, V y) { return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, b, _CMP_LT_OQ)); }
  static V abs(V x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.f), x); }
  static V copysign(V mag, V s) {
    const V sign = _mm256_set1_ps(-0.f);
    return _mm256_or_ps(_mm256_andnot_ps(sign, mag), _mm256_and_ps(sign, s));
  }
  static V round(V x) { return VecAvx2::round(x); }
  static V round_bf16(V x) { return VecAvx2::round_bf16(x); }
  static V scale2(V p, V n) { return VecAvx2::scale2(p, n); }
};

}  // namespace

void eltwise_avx2_run(const EltwiseParams& p, const float* a, const float* b, float* y, pthreadpool_t pool) {
  eltwise::run<V8>(p, a, b, y, pool);
}

// GELU over x[0, n) in place (the conv kernels' epilogue calls it for Act::gelu through
// apply_act_n: a scalar erf per output would cost more than the matrix product's rows).
void gelu_avx2(float* x, int n, bool tanh_form) {
  const eltwise::ActArgs<V8> k(Epilogue{Act::gelu, tanh_form ? 1.f : 0.f});
  int i = 0;
  for (; i + 8 <= n; i += 8) V8::store(x + i, eltwise::act<V8, Act::gelu>(V8::load(x + i), k));
  if (i < n) V8::store_n(x + i, eltwise::act<V8, Act::gelu>(V8::load_n(x + i, n - i), k), n - i);
}

}  // namespace systolic::kernels
