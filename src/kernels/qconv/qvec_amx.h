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
  template <int c, int a, int b> static void dot();
};

template <> inline void QTilesAmx::dot<0, 4, 6>() { _tile_dpbusd(0, 4, 6); }
template <> inline void QTilesAmx::dot<1, 4, 7>() { _tile_dpbusd(1, 4, 7); }
template <> inline void QTilesAmx::dot<2, 5, 6>() { _tile_dpbusd(2, 5, 6); }
template <> inline void QTilesAmx::dot<3, 5, 7>() { _tile_dpbusd(3, 5, 7); }

}  // namespace systolic::kernels
