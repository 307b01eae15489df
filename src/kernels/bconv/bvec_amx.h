// AMX-BF16 tile traits for the bf16 tile driver (bconv_amx.h): tdpbf16ps on 16x64-byte tiles,
// the fp32 epilogue and the rounding gather on AVX-512 (every AMX part has AVX512-BF16).
// Include only from *_amx.cc.
#pragma once
#include <immintrin.h>

#include <cstdint>

#include "kernels/bconv/bvec_avx512bf16.h"

namespace systolic::kernels {

struct BTilesAmx : BVecAvx512Bf16 {
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
  // The tile intrinsics paste their tile number into the instruction's text: one
  // specialization per tile the driver uses.
  template <int t> static void tzero();
  template <int t> static void tload(const void* p, long ld);
  template <int t> static void tstore(void* p, long ld);
  template <int c, int a, int b> static void dot();
  static void release() { _tile_release(); }
};

#define SYSTOLIC_AMX_TILE(t)                                                                               \
  template <> inline void BTilesAmx::tzero<t>() { _tile_zero(t); }                                          \
  template <> inline void BTilesAmx::tload<t>(const void* p, long ld) { _tile_loadd(t, p, ld); }            \
  template <> inline void BTilesAmx::tstore<t>(void* p, long ld) { _tile_stored(t, p, ld); }
SYSTOLIC_AMX_TILE(0)
SYSTOLIC_AMX_TILE(1)
SYSTOLIC_AMX_TILE(2)
SYSTOLIC_AMX_TILE(3)
SYSTOLIC_AMX_TILE(4)
SYSTOLIC_AMX_TILE(5)
SYSTOLIC_AMX_TILE(6)
SYSTOLIC_AMX_TILE(7)
#undef SYSTOLIC_AMX_TILE
template <> inline void BTilesAmx::dot<0, 4, 6>() { _tile_dpbf16ps(0, 4, 6); }
template <> inline void BTilesAmx::dot<1, 4, 7>() { _tile_dpbf16ps(1, 4, 7); }
template <> inline void BTilesAmx::dot<2, 5, 6>() { _tile_dpbf16ps(2, 5, 6); }
template <> inline void BTilesAmx::dot<3, 5, 7>() { _tile_dpbf16ps(3, 5, 7); }

}  // namespace systolic::kernels
