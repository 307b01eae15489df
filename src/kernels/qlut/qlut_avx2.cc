// AVX2 table lookup: vpshufb looks up 16 entries, so the 256-entry table is 16 rows; row h
// answers the bytes whose high nibble is h. (x - 16h) + 0x70 with unsigned saturation keeps
// bit 7 clear exactly there (low nibble kept), and vpshufb writes zero where bit 7 is set, so
// the 16 lookups OR together into the answer: 4 instructions per row and 32 bytes.
#include <immintrin.h>

#include <algorithm>

#include "base/threadpool.h"
#include "kernels/qlut/qlut.h"

namespace systolic::kernels {
namespace {

bool accepts(const CpuFeatures& cpu, std::string* why) {
  if (cpu.avx2) return true;
  if (why) *why = "needs avx2";
  return false;
}

void block(const __m256i* rows, const uint8_t* table, const uint8_t* x, uint8_t* y, int64_t n) {
  const __m256i step = _mm256_set1_epi8(16), bias = _mm256_set1_epi8(0x70);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i));
    __m256i r = _mm256_setzero_si256();
    for (int h = 0; h < 16; ++h) {
      r = _mm256_or_si256(r, _mm256_shuffle_epi8(rows[h], _mm256_adds_epu8(u, bias)));
      u = _mm256_sub_epi8(u, step);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), r);
  }
  qlut_n(table, x + i, y + i, n - i);
}

void load_rows(const uint8_t* table, __m256i* rows) {
  for (int h = 0; h < 16; ++h)
    rows[h] = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(table + 16 * h)));
}

void apply(const uint8_t* table, const uint8_t* x, uint8_t* y, int64_t n, pthreadpool_t pool) {
  __m256i rows[16];
  load_rows(table, rows);
  pthreadpool_parallelize_1d(pool, [&](std::size_t b) {
    const int64_t i = int64_t(b) * kQLutBlock;
    block(rows, table, x + i, y + i, std::min(kQLutBlock, n - i));
  }, std::size_t((n + kQLutBlock - 1) / kQLutBlock), kPoolFlags);
}

void strided_rows(const uint8_t* table, const uint8_t* x, int64_t xs, uint8_t* y, int64_t ys, int64_t n,
                  int64_t count) {
  __m256i rows[16];
  load_rows(table, rows);
  for (int64_t r = 0; r < count; ++r) block(rows, table, x + r * xs, y + r * ys, n);
}

}  // namespace

extern const QLutKernel qlut_u8_avx2 = {"qlut_u8_avx2", accepts, apply, strided_rows};

}  // namespace systolic::kernels
