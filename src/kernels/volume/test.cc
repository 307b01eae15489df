// The N-D reference against the 2-D reference (a 3-D conv is a sum over its depth taps of 2-D
// convs of depth slices; a 3-D max pool is a max of 2-D pools) and against hand-counted windows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/conv/conv.h"
#include "kernels/pool/pool.h"
#include "kernels/volume/volume.h"

namespace systolic::kernels {
namespace {

std::vector<float> random(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

SpatialDim axis(int64_t in, int64_t k, int64_t s, int64_t d, int64_t pb, int64_t pe) {
  return {in, (in + pb + pe - d * (k - 1) - 1) / s + 1, k, s, d, pb, pe};
}

// out[n, m, od] = sum over taps t of conv2d(x[:, :, od*sd - pd + t*dd], w[:, :, t]), with the
// 2-D reference on each slice in range.
TEST(VolumeConv, IsASumOfTwoDConvsOverDepthTaps) {
  struct Case { int64_t n, ic, oc, groups, d, h, w, kd, kh, kw, sd, s, dd, pd0, pd1, p; };
  for (const Case& c : {Case{1, 3, 4, 1, 5, 6, 5, 3, 3, 3, 1, 1, 1, 1, 1, 1},
                        Case{2, 4, 6, 2, 6, 5, 7, 3, 1, 3, 2, 2, 1, 1, 0, 0},
                        Case{1, 2, 3, 1, 7, 4, 4, 2, 2, 2, 1, 1, 2, 0, 2, 1},
                        Case{1, 4, 4, 4, 4, 5, 5, 1, 3, 3, 1, 1, 1, 0, 0, 1}}) {
    VolumeConvParams p{c.n, c.ic, c.oc, c.groups,
                       {axis(c.d, c.kd, c.sd, c.dd, c.pd0, c.pd1), axis(c.h, c.kh, c.s, 1, c.p, c.p),
                        axis(c.w, c.kw, c.s, 1, c.p, c.p)}};
    const int64_t icg = c.ic / c.groups, od = p.dims[0].out, oh = p.dims[1].out, ow = p.dims[2].out;
    auto x = random(c.n * c.ic * c.d * c.h * c.w, 1), w = random(c.oc * icg * c.kd * c.kh * c.kw, 2),
         b = random(c.oc, 3);
    std::vector<float> y(c.n * c.oc * od * oh * ow);
    conv_volume_ref(p, x.data(), w.data(), b.data(), y.data());

    ConvParams q;
    q.n = 1, q.ih = c.h, q.iw = c.w, q.ic = c.ic, q.oh = oh, q.ow = ow, q.oc = c.oc, q.kh = c.kh, q.kw = c.kw;
    q.sh = q.sw = c.s, q.pad_t = q.pad_l = c.p, q.groups = c.groups;
    std::vector<float> slice(c.ic * c.h * c.w), w2(c.oc * icg * c.kh * c.kw), y2(c.oc * oh * ow);
    for (int64_t n = 0; n < c.n; ++n)
      for (int64_t o = 0; o < od; ++o) {
        std::vector<double> want(c.oc * oh * ow, 0.0);
        for (int64_t m = 0; m < c.oc; ++m)
          for (int64_t i = 0; i < oh * ow; ++i) want[m * oh * ow + i] = b[m];
        for (int64_t t = 0; t < c.kd; ++t) {
          const int64_t id = o * c.sd - c.pd0 + t * c.dd;
          if (id < 0 || id >= c.d) continue;
          for (int64_t ch = 0; ch < c.ic; ++ch)
            std::copy_n(&x[((n * c.ic + ch) * c.d + id) * c.h * c.w], c.h * c.w, &slice[ch * c.h * c.w]);
          for (int64_t m = 0; m < c.oc * icg; ++m)
            std::copy_n(&w[(m * c.kd + t) * c.kh * c.kw], c.kh * c.kw, &w2[m * c.kh * c.kw]);
          conv_ref_nchw(q, slice.data(), w2.data(), nullptr, nullptr, Epilogue{}, y2.data());
          for (std::size_t i = 0; i < y2.size(); ++i) want[i] += y2[i];
        }
        for (int64_t m = 0; m < c.oc; ++m)
          for (int64_t i = 0; i < oh * ow; ++i) {
            const float got = y[((n * c.oc + m) * od + o) * oh * ow + i];
            ASSERT_NEAR(got, want[m * oh * ow + i], 1e-5) << "n " << n << " od " << o << " m " << m << " i " << i;
          }
      }
  }
}

// All-ones input: a window's sum is the number of its positions inside the input.
TEST(VolumeConv, CountsWindowPositionsInsideTheInput) {
  VolumeConvParams p{1, 1, 1, 1, {axis(3, 3, 1, 1, 1, 1), axis(3, 3, 1, 1, 1, 1), axis(3, 3, 1, 1, 1, 1)}};
  std::vector<float> x(27, 1.f), w(27, 1.f), y(27);
  conv_volume_ref(p, x.data(), w.data(), nullptr, y.data());
  EXPECT_EQ(y[0], 8.f);    // a corner: 2 x 2 x 2
  EXPECT_EQ(y[1], 12.f);   // an edge: 2 x 2 x 3
  EXPECT_EQ(y[4], 18.f);   // a face's centre: 2 x 3 x 3
  EXPECT_EQ(y[13], 27.f);  // the centre
}

TEST(VolumePool, MaxIsAMaxOfTwoDPoolsAndAverageCountsPadsOnRequest) {
  const int64_t n = 2, c = 3, d = 5, h = 6, w = 6;
  auto x = random(n * c * d * h * w, 4);
  VolumePoolParams p;
  p.n = n, p.c = c, p.dims = {axis(d, 3, 2, 1, 0, 0), axis(h, 3, 2, 1, 1, 1), axis(w, 2, 1, 1, 0, 1)};
  const int64_t od = p.dims[0].out, oh = p.dims[1].out, ow = p.dims[2].out;
  std::vector<float> y(n * c * od * oh * ow), y2(oh * ow);
  pool_volume_ref(p, x.data(), y.data());
  PoolParams q;
  q.kind = PoolKind::max, q.ih = h, q.iw = w, q.oh = oh, q.ow = ow, q.kh = 3, q.kw = 2, q.sh = 2, q.sw = 1;
  q.pad_t = q.pad_b = 1, q.pad_r = 1;
  for (int64_t nc = 0; nc < n * c; ++nc)
    for (int64_t o = 0; o < od; ++o) {
      std::vector<float> want(oh * ow, -INFINITY);
      for (int64_t t = 0; t < 3; ++t) {
        pool_ref_nchw(q, &x[(nc * d + o * 2 + t) * h * w], y2.data());
        for (int64_t i = 0; i < oh * ow; ++i) want[i] = std::max(want[i], y2[i]);
      }
      for (int64_t i = 0; i < oh * ow; ++i) ASSERT_EQ(y[(nc * od + o) * oh * ow + i], want[i]) << nc << " " << o << " " << i;
    }
  // Average of ones over a 2x2x2 window at a corner padded by 1: 1 inside of 8 (8 with pads).
  VolumePoolParams a;
  a.max = false;
  a.dims = {axis(2, 2, 1, 1, 1, 0), axis(2, 2, 1, 1, 1, 0), axis(2, 2, 1, 1, 1, 0)};
  std::vector<float> ones(8, 1.f), ya(8);
  pool_volume_ref(a, ones.data(), ya.data());
  EXPECT_EQ(ya[0], 1.f);
  a.count_include_pad = true;
  pool_volume_ref(a, ones.data(), ya.data());
  EXPECT_EQ(ya[0], 1.f / 8);
  EXPECT_EQ(ya[7], 1.f);
}

}  // namespace
}  // namespace systolic::kernels
