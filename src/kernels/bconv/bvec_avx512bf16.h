// bf16 dot-product traits for AVX512-BF16 (vdpbf16ps on zmm: 16 fp32 lanes, one K pair per lane)
// over the fp32 AVX-512 ops of the epilogue; weights in the K2 layout. Include only from
// *_avx512bf16.cc.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/gemm/vec_avx512.h"

namespace systolic::kernels {

struct BVecAvx512Bf16 : VecAvx512 {
  using A = uint16_t;
  using B = uint16_t;
  static constexpr int KG = 2;
  static V bcast(const uint16_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_castsi512_ps(_mm512_set1_epi32(v));
  }
  static V loadb(const uint16_t* p) { return _mm512_loadu_ps(p); }
  static V dot(V acc, V a, V b) {
    return _mm512_dpbf16_ps(acc, (__m512bh)_mm512_castps_si512(a), (__m512bh)_mm512_castps_si512(b));
  }
  // n floats to bf16, round to nearest even (vcvtne2ps2bf16: denormals flushed to zero).
  static void to_bf16(const float* s, uint16_t* d, int n) {
    int i = 0;
    for (; i + 32 <= n; i += 32) {
      const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(s + i + 16), _mm512_loadu_ps(s + i));
      _mm512_storeu_si512(d + i, (__m512i)v);
    }
    for (; i < n; i += 16) {
      const int k = n - i < 16 ? n - i : 16;
      const __mmask16 m = static_cast<__mmask16>((1u << k) - 1u);
      const __m256bh v = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, s + i));
      _mm256_mask_storeu_epi16(d + i, m, (__m256i)v);
    }
  }
};

}  // namespace systolic::kernels
