// AVX512-BF16 calibration loop: vdpbf16ps on zmm (bf16 pairs into fp32 lanes) with 24
// independent accumulators.
#include <immintrin.h>

#include "kernels/peak/peak.h"
#include "kernels/peak/peak_chains.h"

namespace systolic::kernels {

double peak_bf16_avx512bf16(int64_t iters, float* sink) {
  auto step = [](__m512& acc, __m512 a, __m512 b) {
    __asm__("vdpbf16ps %[b], %[a], %[acc]" : [acc] "+v"(acc) : [a] "v"(a), [b] "v"(b));
  };
  auto sum = [](__m512 x, __m512 y) { return _mm512_add_ps(x, y); };
  auto init = [](int i) { return _mm512_set1_ps(0.001f * i); };
  // Lanes of bf16 pairs, 1e-3 (0x3a83) and -1e-3 (0xba83): the sums stay small and never go
  // subnormal.
  auto pairs = [](uint32_t lo, uint32_t hi) { return _mm512_castsi512_ps(_mm512_set1_epi32(int32_t(hi << 16 | lo))); };
  const __m512 s = peak_chains<24>(iters, step, sum, init, pairs(0x3a83, 0x3a83), pairs(0x3a83, 0xba83),
                                   pairs(0xba83, 0x3a83));
  *sink = _mm512_cvtss_f32(s);
  return static_cast<double>(iters) * 24 * 32 * 2;
}

}  // namespace systolic::kernels
