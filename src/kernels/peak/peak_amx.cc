// AMX calibration loops: tdpbusd (int8) and tdpbf16ps (bf16) on 16-row x 64-byte tiles, four
// accumulator tiles fed by two A and two B tiles (a 2x2 block, as a GEMM microkernel has).
// Run only where the CPU has AMX and the OS granted the tile state (host_cpu().amx_*).
#include <immintrin.h>

#include "kernels/amx_tiles.h"
#include "kernels/peak/peak.h"

namespace systolic::kernels {

double peak_int8_amx(int64_t iters, int32_t* sink) {
  alignas(64) int8_t src[16 * 64];
  for (int i = 0; i < 16 * 64; ++i) src[i] = static_cast<int8_t>(i % 7 - 3);
  alignas(64) int32_t out[16 * 16];
  AmxTiles::config();
  _tile_loadd(4, src, 64);
  _tile_loadd(5, src, 64);
  _tile_loadd(6, src, 64);
  _tile_loadd(7, src, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t it = 0; it < iters; ++it) {
    _tile_dpbusd(0, 4, 6);
    _tile_dpbusd(1, 4, 7);
    _tile_dpbusd(2, 5, 6);
    _tile_dpbusd(3, 5, 7);
  }
  int32_t s = 0;
  _tile_stored(0, out, 64);
  s += out[0];
  _tile_stored(3, out, 64);
  s += out[255];
  _tile_release();
  *sink = s;
  return static_cast<double>(iters) * 4 * (16 * 16 * 64) * 2;
}

double peak_bf16_amx(int64_t iters, float* sink) {
  alignas(64) uint16_t src[16 * 32];
  for (int i = 0; i < 16 * 32; ++i) src[i] = 0x3a83;  // bf16 1e-3
  alignas(64) float out[16 * 16];
  AmxTiles::config();
  _tile_loadd(4, src, 64);
  _tile_loadd(5, src, 64);
  _tile_loadd(6, src, 64);
  _tile_loadd(7, src, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t it = 0; it < iters; ++it) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  float s = 0;
  _tile_stored(0, out, 64);
  s += out[0];
  _tile_stored(3, out, 64);
  s += out[255];
  _tile_release();
  *sink = s;
  return static_cast<double>(iters) * 4 * (16 * 16 * 32) * 2;
}

}  // namespace systolic::kernels
