// Every matmul kernel in matmul.inc against matmul_ref: awkward m/n/k, broadcast A or B,
// strided rows and batches (guard values around C must survive), 1 and 2 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <vector>

#include "base/cpu.h"
#include "base/threadpool.h"
#include "kernels/matmul/matmul.h"

namespace systolic::kernels {
namespace {

constexpr float kGuard = -7.f;

// pad > 0 widens every row stride and batch stride, leaving guard values in between.
void check(int64_t batch, int64_t m, int64_t n, int64_t k, bool a_bcast = false, bool b_bcast = false, int pad = 0,
           int threads = 1) {
  MatMulParams p = matmul_dense(batch, m, n, k, a_bcast, b_bcast);
  p.lda += pad, p.ldb += pad, p.ldc += pad;
  p.a_batch = a_bcast ? 0 : m * p.lda + pad;
  p.b_batch = b_bcast ? 0 : k * p.ldb + pad;
  p.c_batch = m * p.ldc + pad;
  std::mt19937 rng(unsigned(m * 131 + n * 17 + k));
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> a((a_bcast ? 1 : batch) * std::max<int64_t>(1, m * p.lda + pad));
  std::vector<float> b((b_bcast ? 1 : batch) * std::max<int64_t>(1, k * p.ldb + pad));
  for (float& x : a) x = u(rng);
  for (float& x : b) x = u(rng);
  std::vector<float> want(batch * p.c_batch, kGuard), got;
  matmul_ref(p, a.data(), b.data(), want.data());
  ThreadPool pool = make_thread_pool(threads);
  static std::set<std::string> skipped;
  std::size_t count;
  const MatMulKernel* all = matmul_kernels(&count);
  for (std::size_t i = 0; i < count; ++i) {
    std::string why;
    if (!all[i].accepts(p, host_cpu(), &why)) {
      if (skipped.insert(all[i].name).second) std::printf("note: %s skipped: %s\n", all[i].name, why.c_str());
      continue;
    }
    got.assign(want.size(), kGuard);
    all[i].run(p, a.data(), b.data(), got.data(), pool.get());
    int bad = 0;
    for (std::size_t e = 0; e < got.size(); ++e) {
      // Sums of k products of [-1, 1] values in a different order: error grows like sqrt(k) ulps.
      const float tol = 1e-6f * float(k + 1) + 1e-5f * std::fabs(want[e]);
      bad += !(std::fabs(got[e] - want[e]) <= tol);
    }
    EXPECT_EQ(bad, 0) << all[i].name << " batch=" << batch << " m=" << m << " n=" << n << " k=" << k
                      << " a_bcast=" << a_bcast << " b_bcast=" << b_bcast << " pad=" << pad << " threads=" << threads;
  }
}

TEST(MatMul, Shapes) {
  for (int64_t m : {1, 3, 5, 6, 7, 12, 13, 17})
    for (int64_t n : {1, 3, 8, 15, 16, 17, 31, 33, 64})
      for (int64_t k : {1, 2, 7, 64}) check(1, m, n, k);
  check(1, 100, 1000, 3);
  check(1, 4, 5, 0);  // k = 0: zeros
}

TEST(MatMul, Attention) {  // ViT-B/16's Q.K^T and P.V, and Swin's window attention
  check(12, 197, 197, 64, false, false, 0, 2);
  check(12, 197, 64, 197, false, false, 0, 2);
  check(3, 49, 49, 32, false, false, 0, 2);
}

TEST(MatMul, BroadcastAndStrides) {
  for (bool ab : {false, true})
    for (bool bb : {false, true}) {
      check(3, 7, 19, 5, ab, bb);
      check(2, 13, 33, 9, ab, bb, 3);
      check(5, 25, 40, 11, ab, bb, 1, 2);
    }
}

TEST(MatMul, Threads) {
  check(1, 1, 300, 20, false, false, 0, 2);  // one row: n is split
  check(1, 61, 70, 30, false, false, 2, 2);
  check(7, 2, 3, 4, false, false, 0, 2);
}

TEST(MatMul, SelectLogsRejections) {
  std::string log;
  const MatMulKernel* k = matmul_select(matmul_dense(1, 4, 4, 4), CpuFeatures{}, &log);
  ASSERT_NE(k, nullptr);
  EXPECT_STREQ(k->name, "matmul_f32_ref");
  EXPECT_NE(log.find("kernel matmul_f32_6x16_avx2 rejected: needs avx2+fma"), std::string::npos) << log;
  EXPECT_EQ(matmul_find(k->name), k);
  MatMulParams bad = matmul_dense(1, 4, 4, 4);
  bad.lda = 3;
  EXPECT_EQ(matmul_select(bad, host_cpu()), nullptr);
}

}  // namespace
}  // namespace systolic::kernels
