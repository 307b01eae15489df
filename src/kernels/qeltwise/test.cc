// Every uint8 element-wise kernel in qeltwise.inc against the scalar reference, for equality:
// zero points 0/128/255, scale ratios above and below 1, activation clamps, ragged lengths,
// strided blocks.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

#include "base/cpu.h"
#include "base/threadpool.h"
#include "kernels/qeltwise/qeltwise.h"

namespace systolic::kernels {
namespace {

TEST(QEltwise, ReferenceRoundsAndClamps) {
  QAddParams p;
  p.n = 3, p.a_scale = 0.5f, p.b_scale = 1.f, p.a_zp = 10, p.b_zp = 0, p.y_zp = 5, p.lo = -5.f, p.hi = 250.f;
  const uint8_t a[] = {11, 13, 0}, b[] = {0, 1, 255};
  uint8_t y[3];
  qadd_n(p, a, b, y, 3);
  EXPECT_EQ(y[0], 5);    // 0.5 rounds to 0 (ties to even)
  EXPECT_EQ(y[1], 7);    // 1.5 + 1 = 2.5 -> 2, + 5
  EXPECT_EQ(y[2], 255);  // -5 + 255 = 250, at the clamp
}

TEST(QEltwise, EveryKernelMatchesTheReference) {
  std::mt19937 rng(5);
  ThreadPool pool = make_thread_pool(2);
  std::size_t count;
  const QEltwiseKernel* all = qeltwise_kernels(&count);
  std::set<std::string> ran;
  for (int64_t n : {1, 7, 8, 17, 1000, 200003})
    for (int zp : {0, 128, 255})
      for (float ratio : {0.37f, 1.f, 2.9f}) {
        std::vector<uint8_t> a(n), b(n), want(n), got(n);
        for (auto& v : a) v = uint8_t(rng());
        for (auto& v : b) v = uint8_t(rng());
        QAddParams p;
        p.n = n, p.a_scale = ratio, p.b_scale = 1.f / ratio, p.a_zp = zp, p.b_zp = 255 - zp, p.y_zp = 100;
        p.lo = zp == 128 ? 0.f : -100.f;  // a ReLU folded in, sometimes
        p.hi = 155.f;
        qadd_n(p, a.data(), b.data(), want.data(), n);
        for (std::size_t k = 0; k < count; ++k) {
          if (!all[k].accepts(host_cpu(), nullptr)) continue;
          all[k].add(p, a.data(), b.data(), got.data(), pool.get());
          EXPECT_EQ(got, want) << all[k].name << " add n=" << n << " zp=" << zp;
          ran.insert(all[k].name);
        }
      }
  for (std::size_t k = 0; k < count; ++k)
    if (all[k].accepts(host_cpu(), nullptr)) {
      EXPECT_TRUE(ran.count(all[k].name)) << all[k].name;
    }
}

// scale: a squeeze-excitation gate per image and channel (or shared), NHWC and plain, ragged
// channel counts (vector tails), against the scalar form row by row.
TEST(QEltwise, ChannelScaleMatchesTheReference) {
  std::mt19937 rng(9);
  ThreadPool pool = make_thread_pool(2);
  std::size_t count;
  const QEltwiseKernel* all = qeltwise_kernels(&count);
  std::set<std::string> ran;
  for (int64_t c : {3, 8, 21, 96})
    for (bool nhwc : {true, false})
      for (bool per_image : {true, false})
        for (int zp : {0, 128, 255}) {
          QScaleParams p;
          p.n = 2, p.hw = 13, p.c = c, p.nhwc = nhwc, p.gate_per_image = per_image;
          p.g_scale = 1.f / 255.f, p.g_zp = zp == 128 ? 0 : 3, p.ratio = zp == 0 ? 0.7f : 2.3f;
          p.x_zp = zp, p.y_zp = 128 - (zp - 128) / 4;
          const int64_t total = p.n * p.hw * c;
          std::vector<uint8_t> x(total), g((per_image ? p.n : 1) * c), want(total);
          for (auto& v : x) v = uint8_t(rng());
          for (auto& v : g) v = uint8_t(rng());
          for (int64_t i = 0; i < p.n; ++i)
            for (int64_t ch = 0; ch < c; ++ch)
              for (int64_t q = 0; q < p.hw; ++q) {
                const int64_t at = nhwc ? (i * p.hw + q) * c + ch : (i * c + ch) * p.hw + q;
                qscale_n(p, &x[at], nullptr, qscale_multiplier(p, g.data(), i, ch), &want[at], 1);
              }
          int saturated = 0;
          for (uint8_t v : want) saturated += v == 0 || v == 255;
          EXPECT_LT(saturated, total) << "every value saturates: the test would not see the arithmetic";
          for (std::size_t k = 0; k < count; ++k) {
            if (!all[k].accepts(host_cpu(), nullptr)) continue;
            std::vector<uint8_t> got(total, 0xEE);
            std::vector<float> m(p.n * c);
            all[k].scale(p, x.data(), g.data(), m.data(), got.data(), pool.get());
            EXPECT_EQ(got, want) << all[k].name << " c=" << c << " nhwc=" << nhwc << " zp=" << zp;
            ran.insert(all[k].name);
          }
        }
  for (std::size_t k = 0; k < count; ++k)
    if (all[k].accepts(host_cpu(), nullptr)) {
      EXPECT_TRUE(ran.count(all[k].name)) << all[k].name;
    }
}

}  // namespace
}  // namespace systolic::kernels
