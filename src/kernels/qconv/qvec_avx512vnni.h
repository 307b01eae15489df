// Int8 dot-product traits for AVX512-VNNI (vpdpbusd on zmm, 16 int32 lanes) with the
// requantizing epilogue on zmm (qvec_epilogue_avx512.h); weights in the K4 layout. Include
// only from *_avx512vnni.cc.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/qconv/qvec_epilogue_avx512.h"

namespace systolic::kernels {

struct QVecAvx512Vnni : QEpilogueAvx512 {
  using A = uint8_t;
  using B = int8_t;
  static constexpr int KG = 4;
  static V bcast(const uint8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
  }
  static V loadb(const int8_t* p) { return _mm512_loadu_si512(p); }
  static V dot(V acc, V a, V b) { return _mm512_dpbusd_epi32(acc, a, b); }
  static void widen(const uint8_t* s, uint8_t* d, int n) { std::memcpy(d, s, n); }
  // widen() that may write up to 31 bytes past d + n, for gather_window (see there): a masked
  // load and whole stores, inline, where a libc call per few-byte run cost more than the copy.
  static void widen_over(const uint8_t* s, uint8_t* d, int n) {
    for (; n >= 32; n -= 32, s += 32, d += 32)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s)));
    if (n > 0)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), _mm256_maskz_loadu_epi8((uint32_t(1) << n) - 1, s));
  }
};

// int16 pairs into int32 lanes (vpdpwssd: two products summed with the lane, wrapping, never
// saturating), weights in the K2 layout: the int8 Winograd's element GEMMs (qconv_winograd.h).
struct QVecAvx512Wssd : QEpilogueAvx512 {
  using A = int16_t;
  using B = int16_t;
  static constexpr int KG = 2;
  static V bcast(const int16_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
  }
  static V loadb(const int16_t* p) { return _mm512_loadu_si512(p); }
  static V dot(V acc, V a, V b) { return _mm512_dpwssd_epi32(acc, a, b); }
};

}  // namespace systolic::kernels
