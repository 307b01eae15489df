// AVX2 uint8 add and channel scale: 8 bytes a step through float lanes.
#include <immintrin.h>

#include <algorithm>

#include "base/threadpool.h"
#include "kernels/qeltwise/qeltwise.h"

namespace systolic::kernels {
namespace {

constexpr int64_t kBlock = 1 << 16;

bool accepts(const CpuFeatures& cpu, std::string* why) {
  if (cpu.has_avx2_fma()) return true;
  if (why) *why = "needs avx2";
  return false;
}

__m256 load8(const uint8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

void store8(uint8_t* p, __m256 t, __m256i zp) {
  const __m256i q = _mm256_add_epi32(_mm256_cvtps_epi32(t), zp);
  const __m128i w16 = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_packus_epi16(w16, w16));
}

void add_block(const QAddParams& p, const uint8_t* a, const uint8_t* b, uint8_t* y, int64_t n) {
  const __m256 sa = _mm256_set1_ps(p.a_scale), sb = _mm256_set1_ps(p.b_scale);
  const __m256 za = _mm256_set1_ps(float(p.a_zp)), zb = _mm256_set1_ps(float(p.b_zp));
  const __m256 lo = _mm256_set1_ps(p.lo), hi = _mm256_set1_ps(p.hi);
  const __m256i zy = _mm256_set1_epi32(p.y_zp);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 t = _mm256_add_ps(_mm256_mul_ps(_mm256_sub_ps(load8(a + i), za), sa),
                             _mm256_mul_ps(_mm256_sub_ps(load8(b + i), zb), sb));
    store8(y + i, _mm256_min_ps(_mm256_max_ps(t, lo), hi), zy);
  }
  qadd_n(p, a + i, b + i, y + i, n - i);
}

// A row of scale: NHWC 8 channels a step with their multipliers, plain 8 pixels a step with one.
void scale_row(const QScaleParams& p, const uint8_t* x, const float* m, float m0, uint8_t* y, int64_t n) {
  const __m256 zx = _mm256_set1_ps(float(p.x_zp)), b = _mm256_set1_ps(m0);
  const __m256 lo = _mm256_set1_ps(float(-p.y_zp)), hi = _mm256_set1_ps(float(255 - p.y_zp));
  const __m256i zy = _mm256_set1_epi32(p.y_zp);
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    const __m256 t = _mm256_mul_ps(_mm256_sub_ps(load8(x + k), zx), m ? _mm256_loadu_ps(m + k) : b);
    store8(y + k, _mm256_min_ps(_mm256_max_ps(t, lo), hi), zy);
  }
  qscale_n(p, x + k, m ? m + k : nullptr, m0, y + k, n - k);
}

void scale(const QScaleParams& p, const uint8_t* x, const uint8_t* g, float* m, uint8_t* y, pthreadpool_t pool) {
  qscale_rows(p, x, g, m, y, pool, scale_row);
}

void add(const QAddParams& p, const uint8_t* a, const uint8_t* b, uint8_t* y, pthreadpool_t pool) {
  pthreadpool_parallelize_1d(pool, [&](std::size_t blk) {
    const int64_t i = int64_t(blk) * kBlock;
    add_block(p, a + i, b + i, y + i, std::min(kBlock, p.n - i));
  }, std::size_t((p.n + kBlock - 1) / kBlock), kPoolFlags);
}

}  // namespace

extern const QEltwiseKernel qeltwise_u8_avx2 = {"qeltwise_u8_avx2", accepts, add, scale};

}  // namespace systolic::kernels
