// AVX2 int8 depthwise conv run: 16 channels (two ymm of int32 lanes) per step, u8 tap pairs
// widened to int16 and summed with vpmaddwd.
#include <immintrin.h>

#include "kernels/qconv/qconv_dw.h"
#include "kernels/qconv/qvec_epilogue_avx2.h"

namespace systolic::kernels {
namespace {

struct QDwAvx2 : QEpilogueAvx2 {
  static constexpr int OX = 6;  // outputs per tile: 12 accumulators with two vectors

  // (a[c], b[c]) as int16 pairs in the int32 lanes of NV vectors: with two, 16 channels in the
  // step's permuted order (vpmovzxbw keeps each half in its 128-bit lane, the word unpacks stay
  // in lane); with one, 8 channels in order.
  template <int NV>
  static void pairs(const uint8_t* a, const uint8_t* b, V (&out)[NV]) {
    if constexpr (NV == 2) {
      const __m256i va = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a)));
      const __m256i vb = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)));
      out[0] = _mm256_unpacklo_epi16(va, vb);
      out[1] = _mm256_unpackhi_epi16(va, vb);
    } else {
      const __m128i u = _mm_unpacklo_epi8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(a)),
                                          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b)));
      out[0] = _mm256_cvtepu8_epi16(u);
    }
  }
  // a[c] alone (the pair's high half 0), in the same lane order.
  template <int NV>
  static void singles(const uint8_t* a, V (&out)[NV]) {
    if constexpr (NV == 2) {
      const __m256i va = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a)));
      out[0] = _mm256_unpacklo_epi16(va, _mm256_setzero_si256());
      out[1] = _mm256_unpackhi_epi16(va, _mm256_setzero_si256());
    } else {
      out[0] = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(a)));
    }
  }
  // Natural order (channels 0-7, 8-15) to the step's (0-3 8-11, 4-7 12-15) and back: the same
  // swap of the middle 128-bit lanes.
  static void to_perm(V (&v)[2]) {
    const V lo = _mm256_permute2x128_si256(v[0], v[1], 0x20), hi = _mm256_permute2x128_si256(v[0], v[1], 0x31);
    v[0] = lo, v[1] = hi;
  }
  static void from_perm(V (&v)[2]) { to_perm(v); }

  // requant() of a step's two vectors without mid steps or residual, in the permuted order
  // (scales `sc` likewise): the same lane arithmetic, then packus_epi32 of the two, which puts
  // the channels back in order, and one 16-byte store.
  static void requant2(const V (&acc)[2], const V (&sc)[2], const QRequant& rq, uint8_t* dst) {
    auto q = [&](V a, V s) {
      __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(a), _mm256_castsi256_ps(s));
      t = _mm256_min_ps(_mm256_max_ps(t, _mm256_set1_ps(rq.lo)), _mm256_set1_ps(rq.hi));
      return _mm256_add_epi32(_mm256_cvtps_epi32(t), _mm256_set1_epi32(rq.zp));
    };
    const __m256i w16 = _mm256_packus_epi32(q(acc[0], sc[0]), q(acc[1], sc[1]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst),
                     _mm_packus_epi16(_mm256_castsi256_si128(w16), _mm256_extracti128_si256(w16, 1)));
  }

  // acc + madd(x, w) written in place: with intrinsics GCC reassociates the sums into trees of
  // products and spills them.
  static V madd(V acc, V x, const int16_t* w) {
    V t;
    __asm__("vpmaddwd %[w], %[x], %[t]\n\tvpaddd %[t], %[acc], %[acc]"
            : [acc] "+x"(acc), [t] "=&x"(t)
            : [x] "x"(x), [w] "m"(*reinterpret_cast<const __m256i*>(w)));
    return acc;
  }
};

}  // namespace

void qconv_dw_avx2_run(const QConvParams& p, const QConvArgs& a, pthreadpool_t pool) { qdw::run<QDwAvx2>(p, a, pool); }

}  // namespace systolic::kernels
