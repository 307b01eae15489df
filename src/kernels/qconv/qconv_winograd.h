// Int8 Winograd F(2x2, 3x3) conv, exact: for 3x3 stride-1 convs on instruction sets whose only
// int8 product is the 16-bit one (AVX2's vpmaddwd), where activations are widened to int16
// anyway. An input tile's 4x4 bytes become 16 int16 values (B^T d B: sums and differences,
// |v| <= 4 x 255), the weights become 2G g (2G)^T (int16, |u| <= 9 x 128: G's halves doubled),
// and each of the 16 elements is an int16 GEMM with int32 sums. The output transform (sums and
// differences) gives 4x the direct conv's window sums; every step is a ring operation, so the
// int32 results are exact wherever that final value fits, which kMaxIc ensures, and a shift by
// 2 gives the window sums bit for bit. 2.25x fewer products than the direct conv; the
// requantizing epilogue is the direct kernels' (qvec_epilogue_*.h), so outputs equal the
// reference's bytes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/conv/winograd_blocking.h"
#include "kernels/qconv/qconv.h"

namespace systolic::kernels::qwinograd {

constexpr int kTile = 2, kIn = 4, kElems = kIn * kIn;
constexpr int NR = 16, MR = 6;  // the AVX2 GEMM tile: 6 tiles x 16 channels
// 4 x 9 x ic x 255 x 128 < 2^31: the output transform's value stays in int32.
constexpr int kMaxIc = 1024;

// Tiles a block must hold for the weights it streams: a block does 16 x tiles x ic x oc
// products on 16 x ic x oc x 2 bytes of weights, tiles / 2 per byte. At 12, above the AVX2
// machines' ridge: ResNet-50's 7x7 512-channel convs at batch 1 (16 tiles) ran 3.1 ms against
// the direct kernel's 4.1 (systolic_kernel_bench, Zen 1, 2 threads; the next element's weights
// prefetched).
constexpr long kMinBlockTiles = 12;

// 3x3, stride 1, no dilation, one group, u8 output, channels in whole vectors, and enough tiles
// per block for the weights each block streams.
bool eligible(const QConvParams& p, std::string* why);

// Packed weights: [element][panel][ic / 2][NR][2] int16 (the igemm tile's layout per element).
std::size_t packed_bytes(const QConvParams& p);
void pack(const QConvParams& p, const int8_t* w_oihw, void* packed);

// The fp32 Winograd's blocking (winograd_blocking.h), counted in int16 bytes.
winograd::Grid grid(const ConvParams& p, long threads);

}  // namespace systolic::kernels::qwinograd
