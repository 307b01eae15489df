// AMX-BF16 tile traits for the bf16 tile driver (bconv_amx.h): tdpbf16ps on the shared tiles
// (kernels/amx_tiles.h), the fp32 epilogue and the rounding gather on AVX-512 (every AMX part
// has AVX512-BF16). Include only from *_amx.cc.
#pragma once
#include "kernels/amx_tiles.h"
#include "kernels/bconv/bvec_avx512bf16.h"

namespace systolic::kernels {

struct BTilesAmx : BVecAvx512Bf16, AmxTiles {
  template <int c, int a, int b> static void dot();
  // n bf16 values of a source stored as bf16 (bigemm::gather): inline zmm copies, a masked tail.
  static void copy16(const uint16_t* s, uint16_t* d, int n) {
    for (; n >= 32; n -= 32, s += 32, d += 32) _mm512_storeu_si512(d, _mm512_loadu_si512(s));
    if (n > 0) {
      const __mmask32 m = (uint32_t(1) << n) - 1;
      _mm512_mask_storeu_epi16(d, m, _mm512_maskz_loadu_epi16(m, s));
    }
  }
};

template <> inline void BTilesAmx::dot<0, 4, 6>() { _tile_dpbf16ps(0, 4, 6); }
template <> inline void BTilesAmx::dot<1, 4, 7>() { _tile_dpbf16ps(1, 4, 7); }
template <> inline void BTilesAmx::dot<2, 5, 6>() { _tile_dpbf16ps(2, 5, 6); }
template <> inline void BTilesAmx::dot<3, 5, 7>() { _tile_dpbf16ps(3, 5, 7); }

}  // namespace systolic::kernels
