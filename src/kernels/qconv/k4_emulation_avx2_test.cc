// The int8 driver in its VNNI form (u8 activations read in place, weights in the K4 layout of
// 4-byte groups), with vpdpbusd emulated exactly on AVX2, so the code path of the AVX-VNNI,
// AVX512-VNNI and AMX kernels runs against the reference on machines without those units.
// Test-only: the qconv tests add this kernel to the list they check.
#include <immintrin.h>

#include "kernels/conv/conv_util.h"
#include "kernels/qconv/qconv_igemm.h"
#include "kernels/qconv/qvec_epilogue_avx2.h"

namespace systolic::kernels {
namespace {

struct QVecK4Emulated : QEpilogueAvx2 {
  using A = uint8_t;
  using B = int8_t;
  static constexpr int KG = 4;
  static V bcast(const uint8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
  }
  static V loadb(const int8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  // vpdpbusd: acc + sum over the 4 bytes of each lane of u8(a) * s8(b), as two exact vpmaddwd.
  static V dot(V acc, V a, V b) {
    const __m256i lo = _mm256_set1_epi16(0x00FF);
    const __m256i a_even = _mm256_and_si256(a, lo), a_odd = _mm256_srli_epi16(a, 8);
    const __m256i b_even = _mm256_srai_epi16(_mm256_slli_epi16(b, 8), 8), b_odd = _mm256_srai_epi16(b, 8);
    return _mm256_add_epi32(acc, _mm256_add_epi32(_mm256_madd_epi16(a_even, b_even), _mm256_madd_epi16(a_odd, b_odd)));
  }
  static void widen(const uint8_t* s, uint8_t* d, int n) { std::memcpy(d, s, n); }
};

void run_emulated(const QConvParams& p, const QConvArgs& a, pthreadpool_t pool) {
  qigemm::run<QVecK4Emulated, 6, 2>(p, a, pool);
}

bool accepts_emulated(const QConvParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx2_fma()) return conv_reject(why, "needs avx2");
  if (p.conv.src_u8) return conv_reject(why, "src_u8 is the fp32 family's image input");
  return conv_well_formed(p.conv, why);
}

}  // namespace

extern const QConvKernel qconv_u8s8_igemm_6x16_k4emulated_avx2 = {
    "qconv_u8s8_igemm_6x16_k4emulated_avx2", accepts_emulated, qigemm::packed_bytes<int8_t, 16, 4>,
    qigemm::pack<int8_t, 16, 4>, qigemm::im2col_bytes<uint8_t, 6, 16, 4>, run_emulated};

}  // namespace systolic::kernels
