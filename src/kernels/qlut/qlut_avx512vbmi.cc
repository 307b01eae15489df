// AVX-512 VBMI table lookup: vpermi2b indexes 128 bytes of two registers by the low 7 bits,
// so two of them cover the table's halves and bit 7 of the byte picks between them: 64 bytes
// in three instructions.
#include <immintrin.h>

#include <algorithm>

#include "base/threadpool.h"
#include "kernels/qlut/qlut.h"

namespace systolic::kernels {
namespace {

bool accepts(const CpuFeatures& cpu, std::string* why) {
  if (cpu.has_avx512() && cpu.avx512vbmi) return true;
  if (why) *why = cpu.has_avx512() ? "needs avx512-vbmi" : "needs avx512";
  return false;
}

void block(const __m512i t[4], const uint8_t* x, uint8_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    const __m512i u = _mm512_loadu_si512(x + i);
    const __m512i lo = _mm512_permutex2var_epi8(t[0], u, t[1]), hi = _mm512_permutex2var_epi8(t[2], u, t[3]);
    _mm512_storeu_si512(y + i, _mm512_mask_blend_epi8(_mm512_movepi8_mask(u), lo, hi));
  }
  if (i < n) {
    const __mmask64 m = ~__mmask64{0} >> (64 - (n - i));
    const __m512i u = _mm512_maskz_loadu_epi8(m, x + i);
    const __m512i lo = _mm512_permutex2var_epi8(t[0], u, t[1]), hi = _mm512_permutex2var_epi8(t[2], u, t[3]);
    _mm512_mask_storeu_epi8(y + i, m, _mm512_mask_blend_epi8(_mm512_movepi8_mask(u), lo, hi));
  }
}

void apply(const uint8_t* table, const uint8_t* x, uint8_t* y, int64_t n, pthreadpool_t pool) {
  __m512i t[4];
  for (int k = 0; k < 4; ++k) t[k] = _mm512_loadu_si512(table + 64 * k);
  pthreadpool_parallelize_1d(pool, [&](std::size_t b) {
    const int64_t i = int64_t(b) * kQLutBlock;
    block(t, x + i, y + i, std::min(kQLutBlock, n - i));
  }, std::size_t((n + kQLutBlock - 1) / kQLutBlock), kPoolFlags);
}

void rows(const uint8_t* table, const uint8_t* x, int64_t xs, uint8_t* y, int64_t ys, int64_t n, int64_t count) {
  __m512i t[4];
  for (int k = 0; k < 4; ++k) t[k] = _mm512_loadu_si512(table + 64 * k);
  for (int64_t r = 0; r < count; ++r) block(t, x + r * xs, y + r * ys, n);
}

}  // namespace

extern const QLutKernel qlut_u8_avx512vbmi = {"qlut_u8_avx512vbmi", accepts, apply, rows};

}  // namespace systolic::kernels
