// AMX-BF16 tile traits for the bf16 tile driver (bconv_amx.h): tdpbf16ps on the shared tiles
// (kernels/amx_tiles.h), the fp32 epilogue and the rounding gather on AVX-512 (every AMX part
// has AVX512-BF16). Include only from *_amx.cc.
#pragma once
#include "kernels/amx_tiles.h"
#include "kernels/bconv/bvec_avx512bf16.h"

namespace systolic::kernels {

struct BTilesAmx : BVecAvx512Bf16, AmxTiles {
  template <int c, int a, int b> static void dot();
};

template <> inline void BTilesAmx::dot<0, 4, 6>() { _tile_dpbf16ps(0, 4, 6); }
template <> inline void BTilesAmx::dot<1, 4, 7>() { _tile_dpbf16ps(1, 4, 7); }
template <> inline void BTilesAmx::dot<2, 5, 6>() { _tile_dpbf16ps(2, 5, 6); }
template <> inline void BTilesAmx::dot<3, 5, 7>() { _tile_dpbf16ps(3, 5, 7); }

}  // namespace systolic::kernels
