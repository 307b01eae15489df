// Every pool kernel in pool.inc against pool_ref_nchw: max/avg, pads, dilation, global, strides,
// and max pools on bf16 storage.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "base/cpu.h"
#include "base/threadpool.h"
#include "kernels/pool/pool.h"

namespace systolic::kernels {
namespace {

struct Shape {
  int n = 1, c = 1, ih = 1, iw = 1, kh = 1, kw = 1, s = 1, d = 1;
  int pt = 0, pl = 0, pb = 0, pr = 0;
};

int& bf16_runs() {
  static int n = 0;
  return n;
}

PoolParams make(const Shape& s, PoolKind kind, bool include_pad) {
  PoolParams p;
  p.kind = kind, p.count_include_pad = include_pad;
  p.n = s.n, p.c = s.c, p.ih = s.ih, p.iw = s.iw, p.kh = s.kh, p.kw = s.kw;
  p.sh = p.sw = s.s, p.dh = p.dw = s.d;
  p.pad_t = s.pt, p.pad_l = s.pl, p.pad_b = s.pb, p.pad_r = s.pr;
  p.oh = (s.ih + s.pt + s.pb - s.d * (s.kh - 1) - 1) / s.s + 1;
  p.ow = (s.iw + s.pl + s.pr - s.d * (s.kw - 1) - 1) / s.s + 1;
  return p;
}

uint16_t bf16_of(float x) {  // x's high half, rounded to nearest even (x finite)
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return uint16_t((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}

float float_of(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// The max pool on bf16 storage (PoolParams::bf16): each kernel that takes it gives exactly the
// reference's maxima of the bf16 values, and writes nothing outside the dst slice. Every float
// kernel refuses bf16 storage, and every bf16 kernel floats and averages.
void check_bf16(PoolParams p, const std::vector<float>& src_nchw, int slice_pad, pthreadpool_t pool) {
  std::vector<float> rounded(src_nchw.size()), want(std::size_t(p.n) * p.c * p.oh * p.ow);
  for (std::size_t i = 0; i < rounded.size(); ++i) rounded[i] = float_of(bf16_of(src_nchw[i]));
  PoolParams f = p;
  f.src_stride = f.dst_stride = 0;
  pool_ref_nchw(f, rounded.data(), want.data());
  p.bf16 = true;
  const int ihw = p.ih * p.iw, ohw = p.oh * p.ow;
  const long ss = p.src_stride ? p.src_stride : p.c, ds = p.dst_stride ? p.dst_stride : p.c;
  std::vector<uint16_t> snhwc(std::size_t(p.n) * ihw * ss, 0x7FC1);  // a NaN outside the slice
  for (int n = 0; n < p.n; ++n)
    for (int c = 0; c < p.c; ++c)
      for (int q = 0; q < ihw; ++q)
        snhwc[(long(n) * ihw + q) * ss + slice_pad + c] = bf16_of(rounded[(long(n) * p.c + c) * ihw + q]);
  std::size_t count;
  const PoolKernel* all = pool_kernels(&count);
  for (std::size_t k = 0; k < count; ++k) {
    const bool bf16_kernel = std::string(all[k].name).starts_with("pool_bf16_");
    PoolParams avg = p, flt = p;
    avg.kind = PoolKind::avg;
    flt.bf16 = false;
    EXPECT_FALSE(all[k].accepts(avg, host_cpu(), nullptr)) << all[k].name << " took a bf16 average";
    if (bf16_kernel) {
      EXPECT_FALSE(all[k].accepts(flt, host_cpu(), nullptr)) << all[k].name << " took floats";
    }
    if (!all[k].accepts(p, host_cpu(), nullptr)) continue;
    EXPECT_TRUE(bf16_kernel) << all[k].name << " took bf16 storage";
    std::vector<uint16_t> dst(std::size_t(p.n) * ohw * ds, 0xABCD);
    all[k].run(p, reinterpret_cast<const float*>(snhwc.data() + slice_pad), reinterpret_cast<float*>(dst.data()), pool);
    int bad = 0, outside = 0;
    for (int n = 0; n < p.n; ++n)
      for (int q = 0; q < ohw; ++q)
        for (long c = 0; c < ds; ++c) {
          const uint16_t got = dst[(long(n) * ohw + q) * ds + c];
          if (c >= p.c) outside += got != 0xABCD;
          else bad += got != bf16_of(want[(long(n) * p.c + c) * ohw + q]);
        }
    EXPECT_EQ(bad, 0) << all[k].name << " c=" << p.c << " k=" << p.kh << "x" << p.kw << " s" << p.sh;
    EXPECT_EQ(outside, 0) << all[k].name << " wrote outside the dst slice";
    ++bf16_runs();
  }
}

// Runs every accepting kernel for max, avg and avg-with-pad (and bf16 max); src/dst slices when
// pad > 0.
void check(const Shape& s, int slice_pad = 0, int threads = 1) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  ThreadPool pool = make_thread_pool(threads);
  static std::set<std::string> skipped;
  for (auto [kind, inc] : {std::pair{PoolKind::max, false}, {PoolKind::avg, false}, {PoolKind::avg, true}}) {
    PoolParams p = make(s, kind, inc);
    const int ihw = p.ih * p.iw, ohw = p.oh * p.ow;
    std::vector<float> src(std::size_t(p.n) * p.c * ihw), want(std::size_t(p.n) * p.c * ohw);
    for (float& x : src) x = u(rng);
    pool_ref_nchw(p, src.data(), want.data());
    p.src_stride = slice_pad ? p.c + 2 * slice_pad : 0;
    p.dst_stride = slice_pad ? p.c + slice_pad : 0;
    const long ss = p.src_stride ? p.src_stride : p.c, ds = p.dst_stride ? p.dst_stride : p.c;
    std::vector<float> snhwc(std::size_t(p.n) * ihw * ss, NAN);
    for (int n = 0; n < p.n; ++n)
      for (int c = 0; c < p.c; ++c)
        for (int q = 0; q < ihw; ++q)
          snhwc[(long(n) * ihw + q) * ss + slice_pad + c] = src[(long(n) * p.c + c) * ihw + q];
    std::size_t count;
    const PoolKernel* all = pool_kernels(&count);
    for (std::size_t k = 0; k < count; ++k) {
      std::string why;
      if (!all[k].accepts(p, host_cpu(), &why)) {
        if (skipped.insert(all[k].name).second) std::printf("note: %s skipped: %s\n", all[k].name, why.c_str());
        continue;
      }
      std::vector<float> dst(std::size_t(p.n) * ohw * ds, -7.f);
      all[k].run(p, snhwc.data() + slice_pad, dst.data(), pool.get());
      int bad = 0;
      for (int n = 0; n < p.n; ++n)
        for (int q = 0; q < ohw; ++q)
          for (long c = 0; c < ds; ++c) {
            const float got = dst[(long(n) * ohw + q) * ds + c];
            if (c >= p.c) {
              bad += got != -7.f;
              continue;
            }
            const float w = want[(long(n) * p.c + c) * ohw + q];
            bad += !(std::fabs(got - w) <= 1e-5f * (1 + std::fabs(w)) || got == w);
          }
      EXPECT_EQ(bad, 0) << all[k].name << " c=" << p.c << " k=" << p.kh << "x" << p.kw << " s"
                        << p.sh << " kind=" << int(kind) << " include_pad=" << inc;
    }
    if (kind == PoolKind::max) check_bf16(p, src, slice_pad, pool.get());
  }
}

TEST(Pool, Shapes) {
  for (int c : {1, 3, 7, 17, 64, 1000}) {
    check({.c = c, .ih = 9, .iw = 8, .kh = 3, .kw = 3, .s = 2, .pt = 1, .pl = 1, .pb = 1, .pr = 1});
    check({.n = 2, .c = c, .ih = 5, .iw = 7, .kh = 2, .kw = 2, .s = 2});
  }
  check({.c = 64, .ih = 112, .iw = 112, .kh = 3, .kw = 3, .s = 2, .pt = 1, .pl = 1, .pb = 1, .pr = 1});
  check({.c = 19, .ih = 10, .iw = 11, .kh = 3, .kw = 2, .s = 3, .pt = 0, .pl = 1, .pb = 2, .pr = 0});
  check({.c = 33, .ih = 11, .iw = 9, .kh = 3, .kw = 3, .s = 1, .d = 2, .pt = 2, .pl = 1, .pb = 1, .pr = 2});
  check({.c = 9, .ih = 4, .iw = 4, .kh = 5, .kw = 5, .s = 1, .pt = 2, .pl = 2, .pb = 2, .pr = 2});
}

// The bf16 max pools ran (where AVX2 is: the pool step of a bf16 plan with bf16 storage).
TEST(Pool, Bf16StorageRan) {
  if (!host_cpu().avx2) GTEST_SKIP() << "the bf16 pool kernels need AVX2";
  bf16_runs() = 0;
  check({.c = 70, .ih = 9, .iw = 8, .kh = 3, .kw = 3, .s = 2, .pt = 1, .pl = 1, .pb = 1, .pr = 1}, 2);
  EXPECT_GE(bf16_runs(), 1);
}

TEST(Pool, Global) {
  for (int c : {1, 17, 2048}) check({.n = 2, .c = c, .ih = 7, .iw = 7, .kh = 7, .kw = 7});
  check({.c = 40, .ih = 3, .iw = 5, .kh = 3, .kw = 5}, 0, 2);
}

TEST(Pool, SlicesAndThreads) {
  check({.c = 21, .ih = 9, .iw = 9, .kh = 3, .kw = 3, .s = 2, .pt = 1, .pl = 1, .pb = 1, .pr = 1}, 3);
  check({.c = 64, .ih = 8, .iw = 8, .kh = 8, .kw = 8}, 5);
  check({.n = 2, .c = 48, .ih = 15, .iw = 15, .kh = 3, .kw = 3, .s = 2, .pt = 1, .pl = 1}, 0, 2);
}

TEST(Pool, SelectLogsRejections) {
  std::string log;
  const PoolKernel* k = pool_select(make({.c = 8, .ih = 4, .iw = 4, .kh = 2, .kw = 2}, PoolKind::max, false),
                                    CpuFeatures{}, &log);
  ASSERT_NE(k, nullptr);
  EXPECT_STREQ(k->name, "pool_f32_ref");
  EXPECT_NE(log.find("kernel pool_f32_avx2 rejected: needs avx2+fma"), std::string::npos) << log;
  EXPECT_EQ(pool_find(k->name), k);
}

}  // namespace
}  // namespace systolic::kernels
