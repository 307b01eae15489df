// AVX2 uint8 pooling: channel vectors per output pixel, valid-tap ranges computed per pixel
// (pads cost nothing); max on 32, 16 and 8 bytes (vpmaxub), average as int32 sums of 16
// channels.
#include <immintrin.h>

#include <algorithm>

#include "kernels/pool/pool_impl.h"
#include "kernels/pool/pool_util.h"
#include "kernels/qpool/qpool.h"

namespace systolic::kernels {
namespace {

bool accepts(const PoolParams& p, const CpuFeatures& cpu, std::string* why) {
  if (!cpu.has_avx2_fma()) return pool_reject(why, "needs avx2");
  return pool_well_formed(p, why);
}

void max_pixel(const uint8_t* img, long ss, const PoolParams& p, int iy0, int ix0, int ky0, int ky1, int kx0, int kx1,
               uint8_t* d) {
  int c = 0;
  for (; c + 32 <= p.c; c += 32) {
    __m256i m = _mm256_setzero_si256();
    for (int ky = ky0; ky < ky1; ++ky)
      for (int kx = kx0; kx < kx1; ++kx) {
        const uint8_t* s = img + (long(iy0 + ky * p.dh) * p.iw + ix0 + kx * p.dw) * ss + c;
        m = _mm256_max_epu8(m, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s)));
      }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + c), m);
  }
  // 16 and 8 channels at a time below 32: ShuffleNet's 24-channel max pool spent its time in
  // the per-channel loop.
  for (; c + 16 <= p.c; c += 16) {
    __m128i m = _mm_setzero_si128();
    for (int ky = ky0; ky < ky1; ++ky)
      for (int kx = kx0; kx < kx1; ++kx) {
        const uint8_t* s = img + (long(iy0 + ky * p.dh) * p.iw + ix0 + kx * p.dw) * ss + c;
        m = _mm_max_epu8(m, _mm_loadu_si128(reinterpret_cast<const __m128i*>(s)));
      }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + c), m);
  }
  for (; c + 8 <= p.c; c += 8) {
    __m128i m = _mm_setzero_si128();
    for (int ky = ky0; ky < ky1; ++ky)
      for (int kx = kx0; kx < kx1; ++kx) {
        const uint8_t* s = img + (long(iy0 + ky * p.dh) * p.iw + ix0 + kx * p.dw) * ss + c;
        m = _mm_max_epu8(m, _mm_loadl_epi64(reinterpret_cast<const __m128i*>(s)));
      }
    _mm_storel_epi64(reinterpret_cast<__m128i*>(d + c), m);
  }
  for (; c < p.c; ++c) {
    uint8_t m = 0;
    for (int ky = ky0; ky < ky1; ++ky)
      for (int kx = kx0; kx < kx1; ++kx) m = std::max(m, img[(long(iy0 + ky * p.dh) * p.iw + ix0 + kx * p.dw) * ss + c]);
    d[c] = m;
  }
}

void avg_pixel(const uint8_t* img, long ss, const PoolParams& p, const QPoolArgs& a, int iy0, int ix0, int ky0,
               int ky1, int kx0, int kx1, int divisor, uint8_t* d) {
  const int inside = (ky1 - ky0) * (kx1 - kx0);
  int c = 0;
  if (divisor > 0) {
    const __m256 mult = _mm256_set1_ps(a.scale / static_cast<float>(divisor));
    const __m256i off = _mm256_set1_epi32(inside * a.in_zp);
    const __m256 lo = _mm256_set1_ps(static_cast<float>(-a.out_zp)), hi = _mm256_set1_ps(static_cast<float>(255 - a.out_zp));
    for (; c + 16 <= p.c; c += 16) {
      __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
      for (int ky = ky0; ky < ky1; ++ky)
        for (int kx = kx0; kx < kx1; ++kx) {
          const uint8_t* s = img + (long(iy0 + ky * p.dh) * p.iw + ix0 + kx * p.dw) * ss + c;
          const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
          s0 = _mm256_add_epi32(s0, _mm256_cvtepu8_epi32(v));
          s1 = _mm256_add_epi32(s1, _mm256_cvtepu8_epi32(_mm_srli_si128(v, 8)));
        }
      __m256i q[2];
      const __m256i sums[2] = {s0, s1};
      for (int h = 0; h < 2; ++h) {
        __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(sums[h], off)), mult);
        t = _mm256_min_ps(_mm256_max_ps(t, lo), hi);
        q[h] = _mm256_add_epi32(_mm256_cvtps_epi32(t), _mm256_set1_epi32(a.out_zp));
      }
      const __m256i w16 = _mm256_permute4x64_epi64(_mm256_packus_epi32(q[0], q[1]), 0xD8);
      const __m128i b8 = _mm_packus_epi16(_mm256_castsi256_si128(w16), _mm256_extracti128_si256(w16, 1));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + c), b8);
    }
  }
  for (; c < p.c; ++c) {
    int32_t s = 0;
    for (int ky = ky0; ky < ky1; ++ky)
      for (int kx = kx0; kx < kx1; ++kx) s += img[(long(iy0 + ky * p.dh) * p.iw + ix0 + kx * p.dw) * ss + c];
    d[c] = qpool_avg_requant(s, inside, divisor, a);
  }
}

// A task per output row: per pixel, the divisions that find its row cost as much as a 3x3 max
// over 64 channels (ResNet-50's max pool ran a task per pixel).
void run(const PoolParams& p, const QPoolArgs& a, pthreadpool_t pool) {
  const long ss = p.src_stride ? p.src_stride : p.c, ds = p.dst_stride ? p.dst_stride : p.c;
  auto task = [&](std::size_t row) {
    const int n = int(long(row) / p.oh), oy = int(long(row) % p.oh);
    const uint8_t* img = a.src + long(n) * p.ih * p.iw * ss;
    const int iy0 = oy * p.sh - p.pad_t;
    int ky0, ky1;
    pool::tap_range(iy0, p.dh, p.ih, p.kh, &ky0, &ky1);
    int py0 = 0, py1 = 0;
    if (p.count_include_pad) pool::tap_range(iy0 + p.pad_t, p.dh, p.ih + p.pad_t + p.pad_b, p.kh, &py0, &py1);
    uint8_t* d = a.dst + long(row) * p.ow * ds;
    for (int ox = 0; ox < p.ow; ++ox, d += ds) {
      const int ix0 = ox * p.sw - p.pad_l;
      int kx0, kx1;
      pool::tap_range(ix0, p.dw, p.iw, p.kw, &kx0, &kx1);
      if (p.kind == PoolKind::max) {
        max_pixel(img, ss, p, iy0, ix0, ky0, ky1, kx0, kx1, d);
        continue;
      }
      int divisor = (ky1 - ky0) * (kx1 - kx0);
      if (p.count_include_pad) {
        int px0, px1;
        pool::tap_range(ix0 + p.pad_l, p.dw, p.iw + p.pad_l + p.pad_r, p.kw, &px0, &px1);
        divisor = (py1 - py0) * (px1 - px0);
      }
      avg_pixel(img, ss, p, a, iy0, ix0, ky0, ky1, kx0, kx1, divisor, d);
    }
  };
  pthreadpool_parallelize_1d(pool, task, std::size_t(p.n) * p.oh, kPoolFlags);
}

}  // namespace

extern const QPoolKernel qpool_u8_avx2 = {"qpool_u8_avx2", accepts, run};

}  // namespace systolic::kernels
