// AVX-512 (BW) int8 depthwise conv run: 32 channels (two zmm of int32 lanes) per step, u8 tap
// pairs widened to int16 and summed with vpmaddwd. The same template as the AVX2 run.
#include <immintrin.h>

// GCC 12 flags the _mm512_undefined_*() pass-through operand of unmasked intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include "kernels/qconv/qconv_dw.h"
#include "kernels/qconv/qvec_epilogue_avx512.h"

namespace systolic::kernels {
namespace {

struct QDwAvx512 : QEpilogueAvx512 {
  static constexpr int OX = 6;  // outputs per tile: 12 accumulators with two vectors

  // (a[c], b[c]) as int16 pairs in the int32 lanes of NV vectors: with two, 32 channels in the
  // step's permuted order (vpmovzxbw keeps each 8 channels in their 128-bit lane, the word
  // unpacks stay in lane); with one, 16 channels in order.
  template <int NV>
  static void pairs(const uint8_t* a, const uint8_t* b, V (&out)[NV]) {
    if constexpr (NV == 2) {
      const __m512i va = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a)));
      const __m512i vb = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)));
      out[0] = _mm512_unpacklo_epi16(va, vb);
      out[1] = _mm512_unpackhi_epi16(va, vb);
    } else {
      const __m128i va = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a));
      const __m128i vb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b));
      out[0] = _mm512_cvtepu8_epi16(_mm256_set_m128i(_mm_unpackhi_epi8(va, vb), _mm_unpacklo_epi8(va, vb)));
    }
  }
  // a[c] alone (the pair's high half 0), in the same lane order.
  template <int NV>
  static void singles(const uint8_t* a, V (&out)[NV]) {
    if constexpr (NV == 2) {
      const __m512i va = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a)));
      out[0] = _mm512_unpacklo_epi16(va, _mm512_setzero_si512());
      out[1] = _mm512_unpackhi_epi16(va, _mm512_setzero_si512());
    } else {
      out[0] = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a)));
    }
  }
  // pairs<1>() and singles<1>() of the first n < 16 channels through masked loads (the rest 0):
  // a ragged channel tail (ShuffleNet's 58 = 32 + 16 + 10) without copying each tap first.
  static constexpr bool kMaskedTaps = true;
  static void pairs_n(const uint8_t* a, const uint8_t* b, int n, V (&out)[1]) {
    const __mmask16 m = __mmask16((1u << n) - 1);
    const __m128i va = _mm_maskz_loadu_epi8(m, a), vb = _mm_maskz_loadu_epi8(m, b);
    out[0] = _mm512_cvtepu8_epi16(_mm256_set_m128i(_mm_unpackhi_epi8(va, vb), _mm_unpacklo_epi8(va, vb)));
  }
  static void singles_n(const uint8_t* a, int n, V (&out)[1]) {
    out[0] = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(__mmask16((1u << n) - 1), a));
  }

  // Natural order (channels 0-15, 16-31) to the step's (0-3 8-11 16-19 24-27, 4-7 12-15 20-23
  // 28-31) and back; dword indices into the pair (first 0-15, second 16-31).
  static void to_perm(V (&v)[2]) {
    const __m512i i0 = _mm512_setr_epi32(0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18, 19, 24, 25, 26, 27);
    const __m512i i1 = _mm512_setr_epi32(4, 5, 6, 7, 12, 13, 14, 15, 20, 21, 22, 23, 28, 29, 30, 31);
    const V p0 = _mm512_permutex2var_epi32(v[0], i0, v[1]), p1 = _mm512_permutex2var_epi32(v[0], i1, v[1]);
    v[0] = p0, v[1] = p1;
  }
  static void from_perm(V (&v)[2]) {
    const __m512i i0 = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
    const __m512i i1 = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
    const V n0 = _mm512_permutex2var_epi32(v[0], i0, v[1]), n1 = _mm512_permutex2var_epi32(v[0], i1, v[1]);
    v[0] = n0, v[1] = n1;
  }

  // requant() of a step's two vectors without mid steps or residual, in the permuted order
  // (scales `sc` likewise): the same lane arithmetic, then packus_epi32 of the two, which puts
  // the channels back in order, and one 32-byte store.
  static void requant2(const V (&acc)[2], const V (&sc)[2], const QRequant& rq, uint8_t* dst) {
    auto q = [&](V a, V s) {
      __m512 t = _mm512_mul_ps(_mm512_cvtepi32_ps(a), _mm512_castsi512_ps(s));
      t = _mm512_min_ps(_mm512_max_ps(t, _mm512_set1_ps(rq.lo)), _mm512_set1_ps(rq.hi));
      return _mm512_add_epi32(_mm512_cvtps_epi32(t), _mm512_set1_epi32(rq.zp));
    };
    const __m512i w16 = _mm512_packus_epi32(q(acc[0], sc[0]), q(acc[1], sc[1]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm512_cvtepi16_epi8(w16));  // w16 is in [0, 255]
  }

  // acc + madd(x, w) written in place: with intrinsics GCC reassociates the sums into trees of
  // products and spills them.
  static V madd(V acc, V x, const int16_t* w) {
    V t;
    __asm__("vpmaddwd %[w], %[x], %[t]\n\tvpaddd %[t], %[acc], %[acc]"
            : [acc] "+v"(acc), [t] "=&v"(t)
            : [x] "v"(x), [w] "m"(*reinterpret_cast<const __m512i*>(w)));
    return acc;
  }
};

}  // namespace

void qconv_dw_avx512_run(const QConvParams& p, const QConvArgs& a, pthreadpool_t pool) {
  qdw::run<QDwAvx512>(p, a, pool);
}

}  // namespace systolic::kernels
