// Int8 dot-product traits for AVX2 without VNNI: activations and weights widened to int16 and
// multiplied with vpmaddwd (two products summed per int32 lane, exact; vpmaddubsw would
// saturate at 16 bits), plus the requantizing epilogue on 8 lanes. Include only from *_avx2.cc.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/qconv/qvec_epilogue_avx2.h"

namespace systolic::kernels {

struct QVecAvx2 : QEpilogueAvx2 {
  using A = int16_t;
  using B = int16_t;
  static constexpr int KG = 2;
  // Two consecutive int16 of one pixel's window in every lane.
  static V bcast(const int16_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
  }
  static V loadb(const int16_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  // acc + madd(a, b) written in place: with intrinsics GCC sums into the product's register and
  // copies back, one move per accumulator per step (a third of the loop's instructions).
  static V dot(V acc, V a, V b) {
    V t;
    __asm__("vpmaddwd %[b], %[a], %[t]\n\tvpaddd %[t], %[acc], %[acc]" : [acc] "+x"(acc), [t] "=&x"(t) : [a] "x"(a), [b] "x"(b));
    return acc;
  }
  // A run's tail is one more vector ending at its last element, overlapping the one before
  // (the same values written twice), never reading or writing past the run: the 7x7 stem's
  // 21-byte kernel rows spent a fifth of the conv byte by byte.
  static void widen(const uint8_t* s, int16_t* d, int n) {
    if (n >= 16) {
      int i = 0;
      for (; i + 16 <= n; i += 16) widen16(s + i, d + i);
      if (i < n) widen16(s + n - 16, d + n - 16);
    } else if (n >= 8) {
      widen8(s, d), widen8(s + n - 8, d + n - 8);
    } else if (n >= 4) {
      widen4(s, d), widen4(s + n - 4, d + n - 4);
    } else {
      for (int i = 0; i < n; ++i) d[i] = s[i];
    }
  }
  static void widen16(const uint8_t* s, int16_t* d) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d),
                        _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s))));
  }
  static void widen8(const uint8_t* s, int16_t* d) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d), _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s))));
  }
  static void widen4(const uint8_t* s, int16_t* d) {
    int32_t v;
    std::memcpy(&v, s, 4);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(d), _mm_cvtepu8_epi16(_mm_cvtsi32_si128(v)));
  }
};

// QVecAvx2 reading activations as bytes in place (qconv_rows.h): a broadcast takes two source
// bytes and widens them to an int16 pair in every lane (a 16-bit broadcast, then a byte shuffle
// that puts each byte in the low half of its int16).
struct QVecAvx2Bytes : QVecAvx2 {
  using A = uint8_t;
  static V bcast(const uint8_t* p) {
    int16_t v;
    std::memcpy(&v, p, 2);
    const V pair = _mm256_setr_epi8(0, -1, 1, -1, 0, -1, 1, -1, 0, -1, 1, -1, 0, -1, 1, -1,  //
                                    0, -1, 1, -1, 0, -1, 1, -1, 0, -1, 1, -1, 0, -1, 1, -1);
    return _mm256_shuffle_epi8(_mm256_set1_epi16(v), pair);
  }
};

}  // namespace systolic::kernels
