// AVX-512 FMA calibration loop: 12 independent accumulators hide the FMA latency.
#include <immintrin.h>

#include "kernels/peak/peak.h"

namespace systolic::kernels {

double peak_fp32_avx512(int64_t iters, float* sink) {
  __m512 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm512_set1_ps(0.001f * i);
  const __m512 a = _mm512_set1_ps(0.9999f), b = _mm512_set1_ps(1e-6f);
  for (int64_t it = 0; it < iters; ++it)
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  __m512 s = acc[0];
  for (int i = 1; i < 12; ++i) s = _mm512_add_ps(s, acc[i]);
  alignas(64) float lanes[16];  // summed here: GCC 12's _mm512_reduce_add_ps warns of an uninitialized value
  _mm512_store_ps(lanes, s);
  float total = 0;
  for (float v : lanes) total += v;
  *sink = total;
  return static_cast<double>(iters) * 12 * 16 * 2;
}

}  // namespace systolic::kernels
