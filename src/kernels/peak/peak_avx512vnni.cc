// AVX512-VNNI calibration loop: vpdpbusd on zmm (u8 x s8, four products per int32 lane) with 24
// independent accumulators.
#include <immintrin.h>

#include "kernels/peak/peak.h"
#include "kernels/peak/peak_chains.h"

namespace systolic::kernels {

double peak_int8_avx512vnni(int64_t iters, int32_t* sink) {
  auto step = [](__m512i& acc, __m512i a, __m512i b) {
    __asm__("vpdpbusd %[b], %[a], %[acc]" : [acc] "+v"(acc) : [a] "v"(a), [b] "v"(b));
  };
  auto sum = [](__m512i x, __m512i y) { return _mm512_add_epi32(x, y); };
  auto init = [](int i) { return _mm512_set1_epi32(i); };
  const __m512i s = peak_chains<24>(iters, step, sum, init, _mm512_set1_epi8(3), _mm512_set1_epi8(-5),
                                    _mm512_set1_epi8(7));
  alignas(64) int32_t lanes[16];
  _mm512_store_si512(lanes, s);
  *sink = lanes[0];
  return static_cast<double>(iters) * 24 * 64 * 2;
}

}  // namespace systolic::kernels
