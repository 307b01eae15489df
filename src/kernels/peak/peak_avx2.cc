// AVX2 FMA calibration loop: 10 independent accumulators hide the FMA latency.
#include <immintrin.h>

#include "kernels/peak/peak.h"

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

}  // namespace systolic::kernels
