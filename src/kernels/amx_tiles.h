// AMX tile operations shared by the int8 and bf16 tile drivers and the peak loops: the palette-1
// configuration (tiles 0..7, 16 rows of 64 bytes) and zero/load/store per tile. The tile
// intrinsics paste their tile number into the instruction's text, so each tile gets its own
// specialization. Include only from *_amx.cc.
#pragma once
#include <immintrin.h>

#include <cstdint>

namespace systolic::kernels {

struct AmxTiles {
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
  template <int t> static void tzero();
  template <int t> static void tload(const void* p, long ld);
  template <int t> static void tstore(void* p, long ld);
  static void release() { _tile_release(); }
};

#define SYSTOLIC_AMX_TILE(t)                                                                             \
  template <> inline void AmxTiles::tzero<t>() { _tile_zero(t); }                                        \
  template <> inline void AmxTiles::tload<t>(const void* p, long ld) { _tile_loadd(t, p, ld); }          \
  template <> inline void AmxTiles::tstore<t>(void* p, long ld) { _tile_stored(t, p, ld); }
SYSTOLIC_AMX_TILE(0)
SYSTOLIC_AMX_TILE(1)
SYSTOLIC_AMX_TILE(2)
SYSTOLIC_AMX_TILE(3)
SYSTOLIC_AMX_TILE(4)
SYSTOLIC_AMX_TILE(5)
SYSTOLIC_AMX_TILE(6)
SYSTOLIC_AMX_TILE(7)
#undef SYSTOLIC_AMX_TILE

}  // namespace systolic::kernels
