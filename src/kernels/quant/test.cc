// Every quantize/dequantize/round kernel in quant.inc against the scalar reference, for equality:
// ties (x.5), saturation at both ends, zero points 0/128/255, lengths with ragged tails.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "base/cpu.h"
#include "base/threadpool.h"
#include "kernels/quant/quant.h"
#include "kernels/reorder/reorder.h"

namespace systolic::kernels {
namespace {

TEST(Quant, ReferenceRoundsHalfToEvenAndSaturates) {
  const float x[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 1000.f, -1000.f, 3.49f};
  uint8_t y[8];
  quantize_u8_n(x, y, 8, 1.f, 10);
  const uint8_t want[] = {10, 12, 12, 10, 8, 255, 0, 13};
  EXPECT_EQ(std::memcmp(y, want, 8), 0);
  float back[8];
  dequantize_u8_n(want, back, 8, 0.5f, 10);
  EXPECT_FLOAT_EQ(back[1], 1.f);
  EXPECT_FLOAT_EQ(back[6], -5.f);
  float r[] = {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 1000.f, -1000.f, 3.49f, std::nanf("")};
  round_u8_grid_n(r, 9, 1.f, 10);
  const float rwant[] = {0.f, 2.f, 2.f, 0.f, -2.f, 245.f, -10.f, 3.f, -10.f};  // a NaN goes to the lowest step
  for (int i = 0; i < 9; ++i) EXPECT_EQ(r[i], rwant[i]) << i;
}

TEST(Quant, EveryKernelMatchesTheReference) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-300.f, 300.f);
  ThreadPool pool = make_thread_pool(2);
  std::size_t count;
  const QuantKernel* all = quant_kernels(&count);
  for (int64_t n : {1, 7, 8, 9, 100, 70001, 200000})
    for (int zp : {0, 128, 255})
      for (float scale : {0.7f, 1.f, 2.5f}) {
        std::vector<float> x(n);
        for (auto& v : x) v = u(rng);
        for (int64_t i = 0; i < n; i += 5) x[i] = std::nearbyint(x[i]) * scale + 0.5f * scale;  // ties
        std::vector<uint8_t> want(n), got(n);
        std::vector<float> back_want(n), back_got(n);
        quantize_u8_n(x.data(), want.data(), n, scale, zp);
        dequantize_u8_n(want.data(), back_want.data(), n, scale, zp);
        for (std::size_t k = 0; k < count; ++k) {
          if (!all[k].accepts(host_cpu(), nullptr)) continue;
          all[k].quantize(x.data(), got.data(), n, scale, zp, pool.get());
          EXPECT_EQ(got, want) << all[k].name << " n=" << n << " zp=" << zp;
          all[k].dequantize(want.data(), back_got.data(), n, scale, zp, pool.get());
          EXPECT_EQ(std::memcmp(back_got.data(), back_want.data(), n * 4), 0) << all[k].name;
          // Rounding in place is quantize then dequantize, the same bytes.
          std::vector<float> r = x;
          all[k].round(r.data(), n, scale, zp, pool.get());
          EXPECT_EQ(std::memcmp(r.data(), back_want.data(), n * 4), 0) << all[k].name << " round n=" << n;
        }
      }
}

// quantize_nhwc is quantize then an NCHW -> NHWC reorder, byte for byte: RGB images (the
// shuffled path), other channel counts, pixel counts with ragged tails and several pool blocks.
TEST(Quant, QuantizeToNhwcIsQuantizeThenReorder) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-300.f, 300.f);
  ThreadPool pool = make_thread_pool(2);
  std::size_t count;
  const QuantKernel* all = quant_kernels(&count);
  for (int64_t n : {1, 2})
    for (int64_t c : {1, 2, 3, 4, 5, 16, 67})
      for (int64_t hw : {1, 7, 8, 9, 100, 9000})
        for (int zp : {0, 128, 255}) {
          const float scale = 0.7f + 0.9f * float(zp) / 255.f;
          std::vector<float> x(n * c * hw);
          for (auto& v : x) v = u(rng);
          for (std::size_t i = 0; i < x.size(); i += 3) x[i] = std::nearbyint(x[i]) * scale + 0.5f * scale;  // ties
          std::vector<uint8_t> planes(x.size()), want(x.size()), got(x.size(), 7);
          quantize_u8_n(x.data(), planes.data(), int64_t(x.size()), scale, zp);
          const int64_t dims[4] = {n, c, hw, 1};
          reorder_ref_u8(planes.data(), want.data(), dims, 1);
          for (std::size_t k = 0; k < count; ++k) {
            if (!all[k].accepts(host_cpu(), nullptr)) continue;
            all[k].quantize_nhwc(x.data(), got.data(), n, c, hw, scale, zp, pool.get());
            EXPECT_EQ(got, want) << all[k].name << " n=" << n << " c=" << c << " hw=" << hw << " zp=" << zp;
          }
        }
}

}  // namespace
}  // namespace systolic::kernels
