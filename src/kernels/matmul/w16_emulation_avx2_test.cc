// The AVX-512 kernels' shapes (16-lane vectors, matmul's 12x32 tile, norm's 16-wide tails) with
// each 16-lane vector emulated as two AVX2 halves, so their tiling, edge and tail logic runs
// against the references on machines without AVX-512 (the intrinsics themselves do not).
#include <gtest/gtest.h>
#include <immintrin.h>

#include <array>
#include <cmath>
#include <random>
#include <vector>

#include "base/cpu.h"
#include "kernels/matmul/matmul_impl.h"
#include "kernels/norm/norm_impl.h"

namespace systolic::kernels {
namespace {

struct Vec16Emulated {
  struct V {
    __m256 lo, hi;
  };
  static constexpr int W = 16;
  template <class F>
  static V map(V a, V b, F f) { return {f(a.lo, b.lo), f(a.hi, b.hi)}; }
  static __m256i mask(int n) { return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)); }
  static V zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static V set1(float x) { return {_mm256_set1_ps(x), _mm256_set1_ps(x)}; }
  static V load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
  static V bcast(const float* p) { return set1(*p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v.lo), _mm256_storeu_ps(p + 8, v.hi); }
  static V load_n(const float* p, int n) { return {_mm256_maskload_ps(p, mask(n)), _mm256_maskload_ps(p + 8, mask(n - 8))}; }
  static void store_n(float* p, V v, int n) {
    _mm256_maskstore_ps(p, mask(n), v.lo);
    _mm256_maskstore_ps(p + 8, mask(n - 8), v.hi);
  }
  static V fma(V a, V b, V c) { return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)}; }
  static V add(V a, V b) { return map(a, b, [](__m256 x, __m256 y) { return _mm256_add_ps(x, y); }); }
  static V sub(V a, V b) { return map(a, b, [](__m256 x, __m256 y) { return _mm256_sub_ps(x, y); }); }
  static V mul(V a, V b) { return map(a, b, [](__m256 x, __m256 y) { return _mm256_mul_ps(x, y); }); }
  static V max(V a, V b) { return map(a, b, [](__m256 x, __m256 y) { return _mm256_max_ps(x, y); }); }
  static V round(V a) {
    return map(a, a, [](__m256 x, __m256) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); });
  }
  static V pow2(V a) {
    return map(a, a, [](__m256 x, __m256) {
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(x), _mm256_set1_epi32(127)), 23));
    });
  }
  static float hsum(V v) {
    float l[16];
    store(l, v);
    float s = 0;
    for (float x : l) s += x;
    return s;
  }
};

TEST(W16Emulation, MatMul12x32) {
  if (!host_cpu().has_avx2_fma()) GTEST_SKIP() << "needs avx2+fma";
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (auto [batch, m, n, k] : {std::array<int64_t, 4>{1, 1, 1, 1}, {2, 11, 31, 5}, {3, 12, 32, 7}, {2, 13, 33, 64},
                                 {12, 197, 197, 64}, {12, 197, 64, 197}, {1, 25, 100, 3}}) {
    const MatMulParams p = matmul_dense(batch, m, n, k);
    std::vector<float> a(batch * m * k), b(batch * k * n), want(batch * m * n), got(batch * m * n + 16, -7.f);
    for (float& x : a) x = u(rng);
    for (float& x : b) x = u(rng);
    matmul_ref(p, a.data(), b.data(), want.data());
    matmul::run<Vec16Emulated, 12, 2>(p, a.data(), b.data(), got.data(), nullptr);
    int bad = 0;
    for (std::size_t e = 0; e < want.size(); ++e) bad += !(std::fabs(got[e] - want[e]) <= 1e-6f * float(k + 1));
    for (int e = 0; e < 16; ++e) bad += got[want.size() + e] != -7.f;
    EXPECT_EQ(bad, 0) << "batch=" << batch << " m=" << m << " n=" << n << " k=" << k;
  }
}

TEST(W16Emulation, Norm) {
  if (!host_cpu().has_avx2_fma()) GTEST_SKIP() << "needs avx2+fma";
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> u(-4.f, 4.f);
  for (NormKind kind : {NormKind::softmax, NormKind::layer_norm})
    for (int64_t n : {1, 7, 15, 16, 17, 33, 197, 768}) {
      NormParams p;
      p.kind = kind, p.rows = 3, p.n = n;
      std::vector<float> x(3 * n), s(n), b(n), want(3 * n), got(3 * n + 16, -7.f);
      for (float& v : x) v = u(rng);
      for (float& v : s) v = u(rng);
      for (float& v : b) v = u(rng);
      norm_ref(p, x.data(), s.data(), b.data(), want.data());
      norm::run<Vec16Emulated>(p, x.data(), s.data(), b.data(), got.data(), nullptr);
      int bad = 0;
      for (std::size_t e = 0; e < want.size(); ++e) bad += !(std::fabs(got[e] - want[e]) <= 2e-6f + 2e-5f * std::fabs(want[e]));
      for (int e = 0; e < 16; ++e) bad += got[want.size() + e] != -7.f;
      EXPECT_EQ(bad, 0) << "kind=" << int(kind) << " n=" << n;
    }
}

}  // namespace
}  // namespace systolic::kernels
