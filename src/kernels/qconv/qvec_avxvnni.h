// Int8 dot-product traits for AVX-VNNI (VEX vpdpbusd on ymm): u8 activations x s8 weights, four
// products summed into each int32 lane, weights in the K4 layout (16 channels x 4 bytes of K
// per 64-byte row, the VNNI and AMX operand). Include only from *_avxvnni.cc.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/qconv/qvec_avx2.h"
#include "kernels/qconv/qvec_epilogue_avx2.h"

namespace systolic::kernels {

struct QVecAvxVnni : QEpilogueAvx2 {
  using A = uint8_t;
  using B = int8_t;
  static constexpr int KG = 4;
  static V bcast(const uint8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
  }
  static V loadb(const int8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static V dot(V acc, V a, V b) { return _mm256_dpbusd_avx_epi32(acc, a, b); }
  static void widen(const uint8_t* s, uint8_t* d, int n) { std::memcpy(d, s, n); }
};

// AVX2's int16 traits with the pairs' products summed into the lane by one instruction
// (vpdpwssd, wrapping like vpmaddwd + vpaddd): the int8 Winograd's element GEMMs.
struct QVecAvxVnniWssd : QVecAvx2 {
  static V dot(V acc, V a, V b) { return _mm256_dpwssd_avx_epi32(acc, a, b); }
};

}  // namespace systolic::kernels
