// Int8 Winograd F(2x2, 3x3) and F(3x3, 3x3) convs, exact, for 3x3 stride-1 convs: an input
// tile's bytes become int16 values (B^T d B: small integer combinations), the weights become
// (sG) g (sG)^T with G's fractions scaled away (int16), and each element is an int16 GEMM with
// int32 sums. The output transform gives s^2 times the direct conv's window sums; every step is
// a ring operation, so int32 wraparound in between does not matter: s^2 = 4 x odd, the odd
// factor goes by its inverse mod 2^32 and the 4 by a shift, exact wherever 4x the window sum
// fits int32 (kMaxIc). The requantizing epilogue is the direct kernels' (qvec_epilogue_*.h), so
// outputs equal the reference's bytes. F(2x2): 2.25x fewer products than the direct conv;
// F(3x3): 3.24x, on 1.56x the packed weights. Where the only int8 product is AVX2's 16-bit
// vpmaddwd both win; with VNNI the int16 dot product (vpdpwssd) does half the byte one's
// products per instruction, so F(3x3) alone wins (1.62x fewer instructions before the
// transforms).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/conv/winograd_blocking.h"
#include "kernels/qconv/qconv.h"

namespace systolic::kernels::qwinograd {

// B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], A^T = [1 1 1 0; 0 1 -1 -1], s = 2;
// |v| <= 4 x 255, |u| <= 9 x 128.
struct F2 {
  static constexpr int kTile = 2, kIn = 4;
  static constexpr int kG[kIn][3] = {{2, 0, 0}, {1, 1, 1}, {1, -1, 1}, {0, 0, 2}};  // 2G
  static constexpr uint32_t kOdd = 1;  // s^2 = 4 x kOdd
};
// Points 0, 1, -1, 2: B^T = [2 -1 -2 1 0; 0 -2 -1 1 0; 0 2 -3 1 0; 0 -1 0 1 0; 0 2 -1 -2 1],
// A^T = [1 1 1 1 0; 0 1 -1 2 0; 0 1 1 4 1], s = 6; |v| <= 36 x 255, |u| <= 81 x 128.
struct F3 {
  static constexpr int kTile = 3, kIn = 5;
  static constexpr int kG[kIn][3] = {{3, 0, 0}, {-3, -3, -3}, {-1, 1, -1}, {1, 2, 4}, {0, 0, 6}};  // 6G
  static constexpr uint32_t kOdd = 9;
};

template <class F>
constexpr int kElems = F::kIn * F::kIn;

// The GEMM tile (MR tiles x NR channels), the channels the input transform takes at once (CW,
// one int16 vector) and the cache budgets, per vector width.
struct Ymm {  // AVX2 and AVX-VNNI: 6 x 16, 12 accumulators
  static constexpr int MR = 6, NR = 16, CW = 16;
  static constexpr igemm::Blocking kBlocking = igemm::kBlockingAvx2;
};
struct Zmm {  // AVX512-VNNI: 6 x 64, 24 accumulators
  static constexpr int MR = 6, NR = 64, CW = 32;
  static constexpr igemm::Blocking kBlocking = igemm::kBlockingAvx512;
};

// How many times the outputs F's tiles cover (a ragged edge's tiles compute outputs that are
// dropped). With VNNI, F(3x3) does 1.62x fewer instructions than the direct conv before this
// waste: at most kVnniMaxWaste (at 7x7, 9 tiles for 49 outputs, 1.65x, the zmm form ran 0.7x
// the direct kernel; 14x14 is 1.15x).
template <class F>
double waste(const ConvParams& p) {
  const long tiles = long(winograd::ceil_tiles(p.oh, F::kTile)) * winograd::ceil_tiles(p.ow, F::kTile);
  return double(tiles * F::kTile * F::kTile) / (double(p.oh) * p.ow);
}
constexpr double kVnniMaxWaste = 1.35;
// 4 x 9 x ic x 255 x 128 < 2^31.
constexpr int kMaxIc = 1024;

// Tiles a block must hold for the weights it streams: a block does elems x tiles x ic x oc
// products on elems x ic x oc x 2 bytes of weights, tiles / 2 per byte. At 12, above the AVX2
// machines' ridge: ResNet-50's 7x7 512-channel convs at batch 1 (16 tiles of F(2x2)) ran 3.1 ms
// against the direct kernel's 4.1 (systolic_kernel_bench, Zen 1, 2 threads; the next element's
// weights prefetched).
constexpr long kMinBlockTiles = 12;
// With VNNI the direct kernel is 1.62x closer and its weights 5.6x smaller (int8, 9 taps against
// int16, 25 elements): inside ResNet-50 at batch 1, the 256-channel convs at 14x14 (one block of
// 25 tiles, 3.3 MB of weights from L3 per conv) ran 0.35-0.39 ms against the direct 0.29-0.36.
constexpr long kVnniMinBlockTiles = 48;
// On AMD's Zen 4 (L3 its core complex's own), the same convs at batch 1 ran 0.24-0.27 ms on
// Winograd against the direct kernel's 0.30-0.36, and the model 3% faster: there a block of 24
// tiles is enough.
constexpr long kVnniMinBlockTilesAmd = 24;
inline long vnni_min_block_tiles(const CpuFeatures& cpu) { return cpu.amd ? kVnniMinBlockTilesAmd : kVnniMinBlockTiles; }

// 3x3, stride 1, no dilation, one group, u8 output, channels in whole vectors, tiles covering at
// most max_waste times the outputs, and at least min_tiles tiles per block for the weights each
// block streams.
template <class F, class S>
bool eligible(const QConvParams& p, std::string* why, double max_waste = 2.0, long min_tiles = kMinBlockTiles);

// Packed weights: [element][panel][ic / 2][NR][2] int16 (the igemm tile's layout per element).
template <class F, class S>
std::size_t packed_bytes(const QConvParams& p);
template <class F, class S>
void pack(const QConvParams& p, const int8_t* w_oihw, void* packed);

// The fp32 Winograd's blocking (winograd_blocking.h), counted in int16 bytes.
template <class F, class S>
winograd::Grid grid(const ConvParams& p, long threads);

}  // namespace systolic::kernels::qwinograd
