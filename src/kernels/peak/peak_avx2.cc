// AVX2 calibration loops: fp32 FMA with 10 independent accumulators, and the int8 path of the
// AVX2 int8 kernels (vpmaddwd on int16 pairs, then vpaddd) with 12, as their 6x16 tile has.
#include <immintrin.h>

#include "kernels/peak/peak.h"
#include "kernels/peak/peak_chains.h"

namespace systolic::kernels {

double peak_fp32_avx2(int64_t iters, float* sink) {
  __m256 acc[10];
  for (int i = 0; i < 10; ++i) acc[i] = _mm256_set1_ps(0.001f * i);
  const __m256 a = _mm256_set1_ps(0.9999f), b = _mm256_set1_ps(1e-6f);
  for (int64_t it = 0; it < iters; ++it)
#pragma GCC unroll 10
    for (int i = 0; i < 10; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  __m256 s = acc[0];
  for (int i = 1; i < 10; ++i) s = _mm256_add_ps(s, acc[i]);
  *sink = _mm256_cvtss_f32(s);
  return static_cast<double>(iters) * 10 * 8 * 2;
}

// Each step is the kernels' own asm pair (kernels/qconv/qvec_avx2.h), which also keeps the
// compiler from hoisting the loop-invariant product. 12 accumulators, 3 operands and the
// product fill the 16 ymm registers.
double peak_int8_avx2(int64_t iters, int32_t* sink) {
  auto step = [](__m256i& acc, __m256i a, __m256i b) {
    __m256i t;
    __asm__("vpmaddwd %[b], %[a], %[t]\n\tvpaddd %[t], %[acc], %[acc]"
            : [acc] "+x"(acc), [t] "=&x"(t)
            : [a] "x"(a), [b] "x"(b));
  };
  auto sum = [](__m256i x, __m256i y) { return _mm256_add_epi32(x, y); };
  auto init = [](int i) { return _mm256_set1_epi32(i); };
  const __m256i s = peak_chains<12>(iters, step, sum, init, _mm256_set1_epi16(3), _mm256_set1_epi16(-5),
                                    _mm256_set1_epi16(7));
  *sink = _mm256_cvtsi256_si32(s);
  return static_cast<double>(iters) * 12 * 16 * 2;
}

}  // namespace systolic::kernels
