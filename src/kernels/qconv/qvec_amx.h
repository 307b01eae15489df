// AMX tile traits for the int8 tile driver (qconv_amx.h): tdpbusd on 16x64-byte tiles, the
// requantizing epilogue on zmm. Include only from *_amx.cc.
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "kernels/qconv/qvec_epilogue_avx512.h"

namespace systolic::kernels {

struct QTilesAmx : QEpilogueAvx512 {
  using A = uint8_t;
  static void widen(const uint8_t* s, uint8_t* d, int n) { std::memcpy(d, s, n); }

  // The 64-byte tile configuration (palette 1): tiles 0..7, 16 rows of 64 bytes.
  struct alignas(64) Config {
    uint8_t palette = 1;
    uint8_t start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t colsb[16] = {};
    uint8_t rows[16] = {};
  };
  static void config() {
    Config c;
    for (int t = 0; t < 8; ++t) c.colsb[t] = 64, c.rows[t] = 16;
    _tile_loadconfig(&c);
  }
  // The tile intrinsics paste their tile number into the instruction's text, so each tile the
  // driver uses gets its own specialization below.
  template <int t> static void tzero();
  template <int t> static void tload(const void* p, long ld);
  template <int t> static void tstore(void* p, long ld);
  template <int c, int a, int b> static void dot();
  static void release() { _tile_release(); }
};

#define SYSTOLIC_AMX_TILE(t)                                                                               \
  template <> inline void QTilesAmx::tzero<t>() { _tile_zero(t); }                                          \
  template <> inline void QTilesAmx::tload<t>(const void* p, long ld) { _tile_loadd(t, p, ld); }            \
  template <> inline void QTilesAmx::tstore<t>(void* p, long ld) { _tile_stored(t, p, ld); }
SYSTOLIC_AMX_TILE(0)
SYSTOLIC_AMX_TILE(1)
SYSTOLIC_AMX_TILE(2)
SYSTOLIC_AMX_TILE(3)
SYSTOLIC_AMX_TILE(4)
SYSTOLIC_AMX_TILE(5)
SYSTOLIC_AMX_TILE(6)
SYSTOLIC_AMX_TILE(7)
#undef SYSTOLIC_AMX_TILE
template <> inline void QTilesAmx::dot<0, 4, 6>() { _tile_dpbusd(0, 4, 6); }
template <> inline void QTilesAmx::dot<1, 4, 7>() { _tile_dpbusd(1, 4, 7); }
template <> inline void QTilesAmx::dot<2, 5, 6>() { _tile_dpbusd(2, 5, 6); }
template <> inline void QTilesAmx::dot<3, 5, 7>() { _tile_dpbusd(3, 5, 7); }

}  // namespace systolic::kernels
