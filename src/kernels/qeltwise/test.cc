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
        QRequantParams r;
        r.rows = 3, r.cols = n / 3 + 1, r.src_stride = r.cols + 5, r.dst_stride = r.cols + 2;
        r.scale = ratio, r.x_zp = zp, r.y_zp = 37;
        std::vector<uint8_t> src(r.rows * r.src_stride), rwant(r.rows * r.dst_stride, 0xEE);
        for (auto& v : src) v = uint8_t(rng());
        for (int64_t row = 0; row < r.rows; ++row)
          qrequant_n(r, src.data() + row * r.src_stride, rwant.data() + row * r.dst_stride, r.cols);
        for (std::size_t k = 0; k < count; ++k) {
          if (!all[k].accepts(host_cpu(), nullptr)) continue;
          all[k].add(p, a.data(), b.data(), got.data(), pool.get());
          EXPECT_EQ(got, want) << all[k].name << " add n=" << n << " zp=" << zp;
          std::vector<uint8_t> rgot(rwant.size(), 0xEE);
          all[k].requant(r, src.data(), rgot.data(), pool.get());
          EXPECT_EQ(rgot, rwant) << all[k].name << " requant n=" << n << " zp=" << zp;
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
