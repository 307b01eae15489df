// AMX tile traits for the int8 tile driver (qconv_amx.h): tdpbusd on the shared tiles
// (kernels/amx_tiles.h), the requantizing epilogue on zmm. Include only from *_amx.cc.
#pragma once
#include <cstring>

#include "kernels/amx_tiles.h"
#include "kernels/qconv/qvec_epilogue_avx512.h"

namespace systolic::kernels {

struct QTilesAmx : QEpilogueAvx512, AmxTiles {
  using A = uint8_t;
  static void widen(const uint8_t* s, uint8_t* d, int n) { std::memcpy(d, s, n); }
  // widen() that may write up to 63 bytes past d + n (gather_window): inline zmm copies, a
  // masked load for the tail, instead of a libc call per kernel row (21 bytes in the stem). The
  // stem at batch 1 ran 0.33 -> 0.28 ms with the first ymm form of this, a 3x3 64->64 conv at
  // batch 16 1.40 -> 1.30 ms with zmm (kernel bench, interleaved).
  static void widen_over(const uint8_t* s, uint8_t* d, int n) {
    for (; n >= 64; n -= 64, s += 64, d += 64) _mm512_storeu_si512(d, _mm512_loadu_si512(s));
    if (n > 0) _mm512_storeu_si512(d, _mm512_maskz_loadu_epi8((uint64_t(1) << n) - 1, s));
  }
  template <int c, int a, int b> static void dot();
};

template <> inline void QTilesAmx::dot<0, 4, 6>() { _tile_dpbusd(0, 4, 6); }
template <> inline void QTilesAmx::dot<1, 4, 7>() { _tile_dpbusd(1, 4, 7); }
template <> inline void QTilesAmx::dot<2, 5, 6>() { _tile_dpbusd(2, 5, 6); }
template <> inline void QTilesAmx::dot<3, 5, 7>() { _tile_dpbusd(3, 5, 7); }

}  // namespace systolic::kernels
