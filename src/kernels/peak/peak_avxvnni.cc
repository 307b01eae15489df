// AVX-VNNI calibration loop: vpdpbusd on ymm (u8 x s8, four products per int32 lane) with 12
// independent accumulators, the 6x16 tile of the AVX-VNNI int8 kernel.
#include <immintrin.h>

#include "kernels/peak/peak.h"
#include "kernels/peak/peak_chains.h"

namespace systolic::kernels {

double peak_int8_avxvnni(int64_t iters, int32_t* sink) {
  auto step = [](__m256i& acc, __m256i a, __m256i b) {
    __asm__("%{vex%} vpdpbusd %[b], %[a], %[acc]" : [acc] "+x"(acc) : [a] "x"(a), [b] "x"(b));
  };
  auto sum = [](__m256i x, __m256i y) { return _mm256_add_epi32(x, y); };
  auto init = [](int i) { return _mm256_set1_epi32(i); };
  const __m256i s = peak_chains<12>(iters, step, sum, init, _mm256_set1_epi8(3), _mm256_set1_epi8(-5),
                                    _mm256_set1_epi8(7));
  *sink = _mm256_cvtsi256_si32(s);
  return static_cast<double>(iters) * 12 * 32 * 2;
}

}  // namespace systolic::kernels
