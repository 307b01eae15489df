// Every uint8 pool kernel in qpool.inc against qpool_ref_nchw, for equality: max and average
// (with and without counted padding), global pools, odd channel counts, strides, zero points.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

#include "base/cpu.h"
#include "base/threadpool.h"
#include "kernels/qpool/qpool.h"

namespace systolic::kernels {
namespace {

std::set<std::string>& ran_names() {
  static std::set<std::string> s;
  return s;
}

void check(PoolParams p, int in_zp, int out_zp, float scale, int threads = 1) {
  p.oh = (p.ih + p.pad_t + p.pad_b - p.dh * (p.kh - 1) - 1) / p.sh + 1;
  p.ow = (p.iw + p.pad_l + p.pad_r - p.dw * (p.kw - 1) - 1) / p.sw + 1;
  std::mt19937 rng(p.c * 31 + p.ih);
  const long ihw = long(p.ih) * p.iw, ohw = long(p.oh) * p.ow;
  std::vector<uint8_t> src(std::size_t(p.n) * p.c * ihw), want(std::size_t(p.n) * p.c * ohw);
  for (auto& v : src) v = uint8_t(rng());
  QPoolArgs a;
  a.src = src.data(), a.dst = want.data(), a.in_zp = in_zp, a.out_zp = out_zp, a.scale = scale;
  qpool_ref_nchw(p, a);
  std::vector<uint8_t> nhwc(src.size());
  for (int n = 0; n < p.n; ++n)
    for (int c = 0; c < p.c; ++c)
      for (long q = 0; q < ihw; ++q) nhwc[(n * ihw + q) * p.c + c] = src[(long(n) * p.c + c) * ihw + q];
  ThreadPool pool = make_thread_pool(threads);
  std::size_t count;
  const QPoolKernel* all = qpool_kernels(&count);
  for (std::size_t k = 0; k < count; ++k) {
    if (!all[k].accepts(p, host_cpu(), nullptr)) continue;
    std::vector<uint8_t> dst(want.size(), 0xEE);
    QPoolArgs b = a;
    b.src = nhwc.data(), b.dst = dst.data();
    all[k].run(p, b, pool.get());
    long bad = 0;
    for (int n = 0; n < p.n; ++n)
      for (int c = 0; c < p.c; ++c)
        for (long q = 0; q < ohw; ++q) bad += dst[(n * ohw + q) * p.c + c] != want[(long(n) * p.c + c) * ohw + q];
    EXPECT_EQ(bad, 0) << all[k].name << " c=" << p.c << " " << p.ih << "x" << p.iw << " k=" << p.kh << "x" << p.kw
                      << " kind=" << int(p.kind);
    ran_names().insert(all[k].name);
  }
}

PoolParams make(PoolKind kind, int c, int hw, int k, int s, int pad, bool include_pad = false) {
  PoolParams p;
  p.kind = kind, p.n = 2, p.c = c, p.ih = p.iw = hw, p.kh = p.kw = k, p.sh = p.sw = s;
  p.pad_t = p.pad_l = p.pad_b = p.pad_r = pad;
  p.count_include_pad = include_pad;
  return p;
}

TEST(QPool, Max) {
  // Every width of the 32-, 16- and 8-byte steps and the byte tail (24: ShuffleNet's stem).
  for (int c : {1, 7, 8, 15, 16, 24, 31, 33, 57, 64, 100}) {
    check(make(PoolKind::max, c, 13, 3, 2, 1), 0, 0, 1.f);
    check(make(PoolKind::max, c, 8, 2, 2, 0), 0, 0, 1.f, 2);
  }
}

TEST(QPool, Average) {
  for (int c : {1, 5, 16, 17, 48})
    for (int zp : {0, 128, 255}) {
      check(make(PoolKind::avg, c, 9, 3, 1, 1), zp, 255 - zp, 0.8f);
      check(make(PoolKind::avg, c, 9, 3, 2, 1, true), zp, zp, 1.3f);
    }
}

TEST(QPool, Global) {
  for (int c : {3, 64, 2048}) {
    check(make(PoolKind::avg, c, 7, 7, 1, 0), 0, 3, 1.7f, 2);
    check(make(PoolKind::max, c, 7, 7, 1, 0), 0, 0, 1.f);
  }
}

TEST(QPool, EveryRunnableKernelRuns) {
  ran_names().clear();
  check(make(PoolKind::max, 8, 8, 3, 1, 1), 0, 0, 1.f);
  std::size_t count;
  const QPoolKernel* all = qpool_kernels(&count);
  for (std::size_t k = 0; k < count; ++k)
    if (all[k].accepts(make(PoolKind::max, 8, 8, 3, 1, 1), host_cpu(), nullptr)) {
      EXPECT_TRUE(ran_names().count(all[k].name)) << all[k].name << " never ran";
    }
}

}  // namespace
}  // namespace systolic::kernels
