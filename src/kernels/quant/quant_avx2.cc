// AVX2 quantize / dequantize / grid rounding: 8 floats a step (a division, as QuantizeLinear specifies).
#include <immintrin.h>

#include <algorithm>

#include "base/threadpool.h"
#include "kernels/quant/quant.h"

namespace systolic::kernels {
namespace {

bool accepts(const CpuFeatures& cpu, std::string* why) {
  if (cpu.has_avx2_fma()) return true;
  if (why) *why = "needs avx2";
  return false;
}

// Eight quantized values in the low 8 bytes.
inline __m128i quantize8(const float* x, __m256 s, __m256 lo, __m256 hi, __m256i z) {
  const __m256 t = _mm256_min_ps(_mm256_max_ps(_mm256_div_ps(_mm256_loadu_ps(x), s), lo), hi);
  const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(t), z);
  const __m128i w16 = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
  return _mm_packus_epi16(w16, w16);
}

void quantize_block(const float* x, uint8_t* y, int64_t n, float scale, int32_t zp) {
  const __m256 s = _mm256_set1_ps(scale), lo = _mm256_set1_ps(float(-zp)), hi = _mm256_set1_ps(float(255 - zp));
  const __m256i z = _mm256_set1_epi32(zp);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), quantize8(x + i, s, lo, hi, z));
  quantize_u8_n(x + i, y + i, n - i, scale, zp);
}

// Pixels [p0, p1) of one image: eight pixels a step, each channel's eight bytes quantized from
// its plane, then interleaved: three channels (an RGB image) by byte shuffles into 24 bytes,
// other counts byte by byte.
void quantize_nhwc_block(const float* x, uint8_t* y, int64_t c, int64_t hw, int64_t p0, int64_t p1, float scale,
                         int32_t zp) {
  const __m256 s = _mm256_set1_ps(scale), lo = _mm256_set1_ps(float(-zp)), hi = _mm256_set1_ps(float(255 - zp));
  const __m256i z = _mm256_set1_epi32(zp);
  // Output bytes 0-15 and 16-23 of eight RGB pixels from rg = r0..r7 g0..g7 and b = b0..b7.
  const __m128i lo_rg = _mm_setr_epi8(0, 8, -1, 1, 9, -1, 2, 10, -1, 3, 11, -1, 4, 12, -1, 5);
  const __m128i lo_b = _mm_setr_epi8(-1, -1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1);
  const __m128i hi_rg = _mm_setr_epi8(13, -1, 6, 14, -1, 7, 15, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const __m128i hi_b = _mm_setr_epi8(-1, 5, -1, -1, 6, -1, -1, 7, -1, -1, -1, -1, -1, -1, -1, -1);
  int64_t p = p0;
  for (; p + 8 <= p1; p += 8) {
    uint8_t* d = y + p * c;
    if (c == 3) {
      const __m128i rg = _mm_unpacklo_epi64(quantize8(x + p, s, lo, hi, z), quantize8(x + hw + p, s, lo, hi, z));
      const __m128i b = quantize8(x + 2 * hw + p, s, lo, hi, z);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d),
                       _mm_or_si128(_mm_shuffle_epi8(rg, lo_rg), _mm_shuffle_epi8(b, lo_b)));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(d + 16),
                       _mm_or_si128(_mm_shuffle_epi8(rg, hi_rg), _mm_shuffle_epi8(b, hi_b)));
      continue;
    }
    for (int64_t ch = 0; ch < c; ++ch) {
      alignas(16) uint8_t q[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(q), quantize8(x + ch * hw + p, s, lo, hi, z));
      for (int i = 0; i < 8; ++i) d[i * c + ch] = q[i];
    }
  }
  for (; p < p1; ++p)
    for (int64_t ch = 0; ch < c; ++ch) quantize_u8_n(x + ch * hw + p, y + p * c + ch, 1, scale, zp);
}

void quantize_nhwc(const float* x, uint8_t* y, int64_t n, int64_t c, int64_t hw, float scale, int32_t zp,
                   pthreadpool_t pool) {
  const int64_t blocks = (hw + kQuantNhwcPixels - 1) / kQuantNhwcPixels;
  pthreadpool_parallelize_2d(pool, [&](std::size_t img, std::size_t b) {
    const int64_t p0 = int64_t(b) * kQuantNhwcPixels;
    quantize_nhwc_block(x + int64_t(img) * c * hw, y + int64_t(img) * hw * c, c, hw, p0,
                        std::min(hw, p0 + kQuantNhwcPixels), scale, zp);
  }, std::size_t(n), std::size_t(blocks), kPoolFlags);
}

void dequantize_block(const uint8_t* x, float* y, int64_t n, float scale, int32_t zp) {
  const __m256 s = _mm256_set1_ps(scale), z = _mm256_set1_ps(float(zp));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x + i))));
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_sub_ps(v, z), s));
  }
  dequantize_u8_n(x + i, y + i, n - i, scale, zp);
}

void round_block(float* x, int64_t n, float scale, int32_t zp) {
  const __m256 s = _mm256_set1_ps(scale), lo = _mm256_set1_ps(float(-zp)), hi = _mm256_set1_ps(float(255 - zp));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 t = _mm256_min_ps(_mm256_max_ps(_mm256_div_ps(_mm256_loadu_ps(x + i), s), lo), hi);
    const __m256 r = _mm256_add_ps(_mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), _mm256_setzero_ps());
    _mm256_storeu_ps(x + i, _mm256_mul_ps(r, s));  // + 0: -0 rounds to +0, as dequantize gives
  }
  round_u8_grid_n(x + i, n - i, scale, zp);
}

void round(float* x, int64_t n, float scale, int32_t zp, pthreadpool_t pool) {
  pthreadpool_parallelize_1d(pool, [&](std::size_t b) {
    const int64_t i = int64_t(b) * kQuantBlock;
    round_block(x + i, std::min(kQuantBlock, n - i), scale, zp);
  }, std::size_t((n + kQuantBlock - 1) / kQuantBlock), kPoolFlags);
}

void quantize(const float* x, uint8_t* y, int64_t n, float scale, int32_t zp, pthreadpool_t pool) {
  pthreadpool_parallelize_1d(pool, [&](std::size_t b) {
    const int64_t i = int64_t(b) * kQuantBlock;
    quantize_block(x + i, y + i, std::min(kQuantBlock, n - i), scale, zp);
  }, std::size_t((n + kQuantBlock - 1) / kQuantBlock), kPoolFlags);
}

void dequantize(const uint8_t* x, float* y, int64_t n, float scale, int32_t zp, pthreadpool_t pool) {
  pthreadpool_parallelize_1d(pool, [&](std::size_t b) {
    const int64_t i = int64_t(b) * kQuantBlock;
    dequantize_block(x + i, y + i, std::min(kQuantBlock, n - i), scale, zp);
  }, std::size_t((n + kQuantBlock - 1) / kQuantBlock), kPoolFlags);
}

}  // namespace

extern const QuantKernel quant_u8_avx2 = {"quant_u8_avx2", accepts, quantize, dequantize, round, quantize_nhwc};

}  // namespace systolic::kernels
