// Every norm kernel in norm.inc against norm_ref: softmax and layer norm over awkward row lengths
// (tails of every width), with and without bias, large and -inf logits, in place, 1 and 2 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <vector>

#include "base/cpu.h"
#include "base/threadpool.h"
#include "kernels/norm/norm.h"

namespace systolic::kernels {
namespace {

void check(NormKind kind, int64_t rows, int64_t n, bool with_bias = true, float spread = 4.f, int threads = 1,
           bool in_place = false) {
  NormParams p;
  p.kind = kind, p.rows = rows, p.n = n, p.epsilon = 1e-5f;
  std::mt19937 rng(unsigned(rows * 7 + n));
  std::uniform_real_distribution<float> u(-spread, spread);
  std::vector<float> x(rows * n), scale(n), bias(n), want(rows * n), got;
  for (float& v : x) v = u(rng) + 3.f;
  for (float& v : scale) v = u(rng);
  for (float& v : bias) v = u(rng);
  if (kind == NormKind::softmax && n > 2) x[1] = -INFINITY;  // a masked logit
  const float* b = with_bias ? bias.data() : nullptr;
  norm_ref(p, x.data(), scale.data(), b, want.data());
  ThreadPool pool = make_thread_pool(threads);
  static std::set<std::string> skipped;
  std::size_t count;
  const NormKernel* all = norm_kernels(&count);
  for (std::size_t i = 0; i < count; ++i) {
    std::string why;
    if (!all[i].accepts(p, host_cpu(), &why)) {
      if (skipped.insert(all[i].name).second) std::printf("note: %s skipped: %s\n", all[i].name, why.c_str());
      continue;
    }
    got = x;
    std::vector<float> out(rows * n + 8, -7.f);  // guard values past the end
    all[i].run(p, got.data(), scale.data(), b, in_place ? got.data() : out.data(), pool.get());
    const float* y = in_place ? got.data() : out.data();
    int bad = 0;
    for (int64_t e = 0; e < rows * n; ++e) bad += !(std::fabs(y[e] - want[e]) <= 2e-6f + 2e-5f * std::fabs(want[e]));
    for (int e = 0; e < 8 && !in_place; ++e) bad += out[rows * n + e] != -7.f;
    EXPECT_EQ(bad, 0) << all[i].name << " kind=" << int(kind) << " rows=" << rows << " n=" << n
                      << " bias=" << with_bias << " spread=" << spread << " in_place=" << in_place;
  }
}

TEST(Norm, Softmax) {
  for (int64_t n : {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 49, 197, 1000}) check(NormKind::softmax, 5, n);
  check(NormKind::softmax, 12 * 197, 197, true, 4.f, 2);  // ViT-B/16's attention
  check(NormKind::softmax, 7, 100, true, 60.f);           // exp down to ~e-120: flushed, not NaN
  check(NormKind::softmax, 3, 45, true, 4.f, 1, true);
}

TEST(Norm, LayerNorm) {
  for (int64_t n : {1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 33, 96, 768, 1001})
    for (bool bias : {false, true}) check(NormKind::layer_norm, 4, n, bias);
  check(NormKind::layer_norm, 197, 768, true, 4.f, 2);
  check(NormKind::layer_norm, 3, 45, true, 100.f, 1, true);
}

TEST(Norm, SelectLogsRejections) {
  std::string log;
  NormParams p;
  p.rows = 2, p.n = 5;
  const NormKernel* k = norm_select(p, CpuFeatures{}, &log);
  ASSERT_NE(k, nullptr);
  EXPECT_STREQ(k->name, "norm_f32_ref");
  EXPECT_NE(log.find("kernel norm_f32_avx2 rejected: needs avx2+fma"), std::string::npos) << log;
  EXPECT_EQ(norm_find(k->name), k);
  p.n = 0;
  EXPECT_EQ(norm_select(p, host_cpu()), nullptr);
}

}  // namespace
}  // namespace systolic::kernels
