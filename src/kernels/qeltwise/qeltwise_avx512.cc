// AVX-512 uint8 add and channel scale: 16 bytes a step through float lanes,
// the AVX2 kernel's operations at twice the width (scalar tails).
#include <immintrin.h>

#include <algorithm>

#include "base/threadpool.h"
#include "kernels/qeltwise/qeltwise.h"

namespace systolic::kernels {
namespace {

constexpr int64_t kBlock = 1 << 16;

bool accepts(const CpuFeatures& cpu, std::string* why) {
  if (cpu.has_avx512()) return true;
  if (why) *why = "needs avx512";
  return false;
}

__m512 load16(const uint8_t* p) {
  return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
}

// t is clamped to [-zp, 255 - zp]: t + zp fits a byte.
void store16(uint8_t* p, __m512 t, __m512i zp) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm512_cvtusepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(t), zp)));
}

void add_block(const QAddParams& p, const uint8_t* a, const uint8_t* b, uint8_t* y, int64_t n) {
  const __m512 sa = _mm512_set1_ps(p.a_scale), sb = _mm512_set1_ps(p.b_scale);
  const __m512 za = _mm512_set1_ps(float(p.a_zp)), zb = _mm512_set1_ps(float(p.b_zp));
  const __m512 lo = _mm512_set1_ps(p.lo), hi = _mm512_set1_ps(p.hi);
  const __m512i zy = _mm512_set1_epi32(p.y_zp);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 t = _mm512_add_ps(_mm512_mul_ps(_mm512_sub_ps(load16(a + i), za), sa),
                             _mm512_mul_ps(_mm512_sub_ps(load16(b + i), zb), sb));
    store16(y + i, _mm512_min_ps(_mm512_max_ps(t, lo), hi), zy);
  }
  qadd_n(p, a + i, b + i, y + i, n - i);
}

void scale_row(const QScaleParams& p, const uint8_t* x, const float* m, float m0, uint8_t* y, int64_t n) {
  const __m512 zx = _mm512_set1_ps(float(p.x_zp)), b = _mm512_set1_ps(m0);
  const __m512 lo = _mm512_set1_ps(float(-p.y_zp)), hi = _mm512_set1_ps(float(255 - p.y_zp));
  const __m512i zy = _mm512_set1_epi32(p.y_zp);
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    const __m512 t = _mm512_mul_ps(_mm512_sub_ps(load16(x + k), zx), m ? _mm512_loadu_ps(m + k) : b);
    store16(y + k, _mm512_min_ps(_mm512_max_ps(t, lo), hi), zy);
  }
  qscale_n(p, x + k, m ? m + k : nullptr, m0, y + k, n - k);
}

void add(const QAddParams& p, const uint8_t* a, const uint8_t* b, uint8_t* y, pthreadpool_t pool) {
  pthreadpool_parallelize_1d(pool, [&](std::size_t blk) {
    const int64_t i = int64_t(blk) * kBlock;
    add_block(p, a + i, b + i, y + i, std::min(kBlock, p.n - i));
  }, std::size_t((p.n + kBlock - 1) / kBlock), kPoolFlags);
}

void scale(const QScaleParams& p, const uint8_t* x, const uint8_t* g, float* m, uint8_t* y, pthreadpool_t pool) {
  qscale_rows(p, x, g, m, y, pool, scale_row);
}

}  // namespace

extern const QEltwiseKernel qeltwise_u8_avx512 = {"qeltwise_u8_avx512", accepts, add, scale};

}  // namespace systolic::kernels
