// The bf16 driver in its vdpbf16ps form (activations gathered into bf16 K pairs, weights in the
// K2 layout) with vdpbf16ps emulated on AVX2 (two fp32 FMAs per K pair: each bf16 product is
// exact, each add rounds once, the upper pair first), so the driver, its packing and its gather
// run against the reference on machines without AVX512-BF16. Test-only: the bconv tests add this
// kernel to the list they check.
#include <immintrin.h>

#include "kernels/bconv/bconv_igemm.h"
#include "kernels/conv/conv_util.h"
#include "kernels/gemm/vec_avx2.h"

namespace systolic::kernels {
namespace {

struct BVecK2Emulated : VecAvx2 {
  using A = uint16_t;
  using B = uint16_t;
  static constexpr int KG = 2;
  static V bcast(const uint16_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_castsi256_ps(_mm256_set1_epi32(v));
  }
  static V loadb(const uint16_t* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
  static V dot(V acc, V a, V b) {
    const __m256i ai = _mm256_castps_si256(a), bi = _mm256_castps_si256(b), hi = _mm256_set1_epi32(int(0xFFFF0000u));
    const V a1 = _mm256_castsi256_ps(_mm256_and_si256(ai, hi)), b1 = _mm256_castsi256_ps(_mm256_and_si256(bi, hi));
    const V a0 = _mm256_castsi256_ps(_mm256_slli_epi32(ai, 16)), b0 = _mm256_castsi256_ps(_mm256_slli_epi32(bi, 16));
    return _mm256_fmadd_ps(a0, b0, _mm256_fmadd_ps(a1, b1, acc));
  }
  static void to_bf16(const float* s, uint16_t* d, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) {
      // Round to nearest even: add 0x7FFF plus the lowest kept bit, then drop 16 bits.
      const __m256i x = _mm256_castps_si256(_mm256_loadu_ps(s + i));
      const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
      const __m256i r = _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7FFF))), 16);
      const __m128i h = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), h);
    }
    for (; i < n; ++i) d[i] = bf16_bits(s[i]);
  }
};

void run_emulated(const ConvParams& p, const ConvArgs& a, pthreadpool_t pool) {
  bigemm::run<BVecK2Emulated, 6, 2>(p, a, pool);
}

bool accepts_emulated(const ConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx2_fma()) return conv_reject(why, "needs avx2+fma");
  if (p.src_u8) return conv_reject(why, "a uint8 image source is the fp32 family's");
  return conv_well_formed(p, why);
}

}  // namespace

extern const ConvKernel conv_bf16_igemm_6x16_k2emulated_avx2 = {
    "conv_bf16_igemm_6x16_k2emulated_avx2", accepts_emulated, bigemm::packed_floats<16>, bigemm::pack<16>,
    bigemm::workspace_bytes, run_emulated};

}  // namespace systolic::kernels
