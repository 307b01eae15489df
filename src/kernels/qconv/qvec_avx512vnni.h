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
};

}  // namespace systolic::kernels
