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

void quantize_block(const float* x, uint8_t* y, int64_t n, float scale, int32_t zp) {
  const __m256 s = _mm256_set1_ps(scale), lo = _mm256_set1_ps(float(-zp)), hi = _mm256_set1_ps(float(255 - zp));
  const __m256i z = _mm256_set1_epi32(zp);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 t = _mm256_min_ps(_mm256_max_ps(_mm256_div_ps(_mm256_loadu_ps(x + i), s), lo), hi);
    const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(t), z);
    const __m128i w16 = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(y + i), _mm_packus_epi16(w16, w16));
  }
  quantize_u8_n(x + i, y + i, n - i, scale, zp);
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

extern const QuantKernel quant_u8_avx2 = {"quant_u8_avx2", accepts, quantize, dequantize, round};

}  // namespace systolic::kernels
