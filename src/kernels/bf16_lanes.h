// n <= W lanes of bf16 storage (each value a float's high half) as a traits vector (W = 16:
// zmm, 8: ymm), and back. Widening is exact; narrowing keeps the high half, so the lanes must
// hold bf16 values already (rounded, or maxima of bf16 values). Include only from ISA files.
// The all-lanes masked forms on zmm: the plain ones trip GCC 12's -Wmaybe-uninitialized.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace systolic::kernels {

template <class T>
inline typename T::V load_bf16(const uint16_t* q, int n) {
  if constexpr (T::W == 16) {
    const __m256i h = n < 16 ? _mm256_maskz_loadu_epi16(__mmask16((1u << n) - 1), q)
                             : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q));
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, _mm512_maskz_cvtepu16_epi32(0xFFFF, h), 16));
  } else {
    static_assert(T::W == 8);
    __m128i h;
    if (n < 8) {
      alignas(16) uint16_t b[8] = {};
      std::memcpy(b, q, std::size_t(n) * 2);
      h = _mm_load_si128(reinterpret_cast<const __m128i*>(b));
    } else {
      h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    }
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
}

template <class T>
inline void store_bf16(uint16_t* d, typename T::V v, int n) {
  if constexpr (T::W == 16) {
    const __m256i h = _mm512_maskz_cvtepi32_epi16(0xFFFF, _mm512_maskz_srli_epi32(0xFFFF, _mm512_castps_si512(v), 16));
    if (n < 16) _mm256_mask_storeu_epi16(d, __mmask16((1u << n) - 1), h);
    else _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), h);
  } else {
    static_assert(T::W == 8);
    const __m256i w = _mm256_srli_epi32(_mm256_castps_si256(v), 16);  // 0..0xFFFF: packs exactly
    const __m128i h = _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(w, w), 0x08));
    if (n < 8) {
      alignas(16) uint16_t b[8];
      _mm_store_si128(reinterpret_cast<__m128i*>(b), h);
      std::memcpy(d, b, std::size_t(n) * 2);
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d), h);
    }
  }
}

}  // namespace systolic::kernels
