// Every uint8 table kernel in qlut.inc against the scalar reference, for equality: every byte
// value, ragged lengths (vector tails), in place, and a split over the pool.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

#include "base/cpu.h"
#include "base/threadpool.h"
#include "kernels/qlut/qlut.h"

namespace systolic::kernels {
namespace {

TEST(QLut, EveryKernelMatchesTheReference) {
  std::mt19937 rng(11);
  ThreadPool pool = make_thread_pool(2);
  std::size_t count;
  const QLutKernel* all = qlut_kernels(&count);
  std::set<std::string> ran;
  uint8_t table[256];
  for (auto& v : table) v = uint8_t(rng());
  for (int64_t n : {int64_t{1}, int64_t{15}, int64_t{31}, int64_t{32}, int64_t{33}, int64_t{63}, int64_t{64}, int64_t{65},
                    int64_t{256}, int64_t{1000}, 3 * kQLutBlock + 77}) {
    std::vector<uint8_t> x(n), want(n);
    for (int64_t i = 0; i < n; ++i) x[i] = n == 256 ? uint8_t(i) : uint8_t(rng());  // n=256: every value once
    qlut_n(table, x.data(), want.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(want[i], table[x[i]]);
    for (std::size_t k = 0; k < count; ++k) {
      if (!all[k].accepts(host_cpu(), nullptr)) continue;
      std::vector<uint8_t> got(n + 1, 0xEE);
      all[k].apply(table, x.data(), got.data(), n, pool.get());
      EXPECT_EQ(std::vector<uint8_t>(got.begin(), got.begin() + n), want) << all[k].name << " n=" << n;
      EXPECT_EQ(got[n], 0xEE) << all[k].name << " wrote past the end, n=" << n;
      std::vector<uint8_t> inplace = x;
      all[k].apply(table, inplace.data(), inplace.data(), n, pool.get());
      EXPECT_EQ(inplace, want) << all[k].name << " in place, n=" << n;
      ran.insert(all[k].name);
    }
  }
  EXPECT_TRUE(ran.count("qlut_u8_ref"));
  if (host_cpu().avx2) {
    EXPECT_TRUE(ran.count("qlut_u8_avx2"));
  }
  if (host_cpu().has_avx512() && host_cpu().avx512vbmi) {
    EXPECT_TRUE(ran.count("qlut_u8_avx512vbmi"));
  }
}

// rows(): strided runs in place and from another buffer with its own stride, the bytes between
// runs untouched.
TEST(QLut, RowsMatchTheReference) {
  std::mt19937 rng(12);
  std::size_t count;
  const QLutKernel* all = qlut_kernels(&count);
  uint8_t table[256];
  for (auto& v : table) v = uint8_t(rng());
  int ran = 0;
  for (int64_t n : {1, 16, 40, 64, 65, 100, 256})
    for (int64_t stride : {n, n + 7, 3 * n + 64}) {
      const int64_t rows = 5;
      std::vector<uint8_t> y(std::size_t(rows * stride + 8));
      for (auto& v : y) v = uint8_t(rng());
      std::vector<uint8_t> want = y;
      for (int64_t r = 0; r < rows; ++r) qlut_n(table, want.data() + r * stride, want.data() + r * stride, n);
      const int64_t xs = n + 3;
      std::vector<uint8_t> x(std::size_t(rows * xs));
      for (auto& v : x) v = uint8_t(rng());
      std::vector<uint8_t> want_from = y;
      for (int64_t r = 0; r < rows; ++r) qlut_n(table, x.data() + r * xs, want_from.data() + r * stride, n);
      for (std::size_t k = 0; k < count; ++k) {
        if (!all[k].accepts(host_cpu(), nullptr)) continue;
        std::vector<uint8_t> got = y;
        all[k].rows(table, got.data(), stride, got.data(), stride, n, rows);
        EXPECT_EQ(got, want) << all[k].name << " in place, n=" << n << " stride=" << stride;
        got = y;
        all[k].rows(table, x.data(), xs, got.data(), stride, n, rows);
        EXPECT_EQ(got, want_from) << all[k].name << " n=" << n << " stride=" << stride;
        ++ran;
      }
    }
  EXPECT_GT(ran, 0);
}

// qlut_parts: several inputs' rows into their slices of one output, over the pool.
TEST(QLut, PartsFillTheirSlices) {
  std::mt19937 rng(13);
  ThreadPool pool = make_thread_pool(2);
  uint8_t t0[256], t1[256];
  for (int v = 0; v < 256; ++v) t0[v] = uint8_t(rng()), t1[v] = uint8_t(v ^ 0x5a);
  const int64_t rows = 1000, n0 = 58, n1 = 116, ys = n0 + n1;
  std::vector<uint8_t> a(rows * n0), b(rows * n1);
  for (auto& v : a) v = uint8_t(rng());
  for (auto& v : b) v = uint8_t(rng());
  std::vector<uint8_t> want(rows * ys);
  for (int64_t r = 0; r < rows; ++r) {
    qlut_n(t0, a.data() + r * n0, want.data() + r * ys, n0);
    qlut_n(t1, b.data() + r * n1, want.data() + r * ys + n0, n1);
  }
  std::size_t count;
  const QLutKernel* all = qlut_kernels(&count);
  for (std::size_t k = 0; k < count; ++k) {
    if (!all[k].accepts(host_cpu(), nullptr)) continue;
    std::vector<uint8_t> got(want.size(), 0xEE);
    const QLutPart parts[2] = {{t0, a.data(), got.data(), n0, n0, ys}, {t1, b.data(), got.data() + n0, n1, n1, ys}};
    qlut_parts(all[k], parts, 2, rows, pool.get());
    EXPECT_EQ(got, want) << all[k].name;
  }
}

}  // namespace
}  // namespace systolic::kernels
