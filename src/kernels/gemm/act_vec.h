// The vector epilogue's activations against apply_act, bit for bit (SiLU, through a vector exp,
// within a few ulp), on the traits of one instruction set: values across the kinks, signed
// zeros, infinities and NaN.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/gemm/igemm_microkernel.h"

namespace systolic::kernels::testing {

// tol: 0 for bit equality; else |got - want| <= tol * max(|want|, 1) (and the same NaN).
template <class T>
void expect_act_vec_matches_scalar(const Epilogue& e, double tol = 0) {
  constexpr int W = T::W;
  std::vector<float> xs = {0.f, -0.f, 1e-30f, -1e-30f, 3.f, -3.f, 2.9999998f, -3.0000002f, 6.f, 1e30f, -1e30f,
                           std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN()};
  for (int i = 0; i < 4000; ++i) xs.push_back(-8.f + 16.f * float(i) / 4000.f + 1e-4f * float(i % 7));
  while (xs.size() % W) xs.push_back(0.5f);
  for (std::size_t i = 0; i < xs.size(); i += W) {
    float got[W];
    T::store(got, act_vec<T>(T::load(&xs[i]), e.act, T::set1(e.a), T::set1(e.b)));
    for (int k = 0; k < W; ++k) {
      const float want = apply_act(e, xs[i + k]);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got[k])) << "act " << int(e.act) << ", x = " << xs[i + k];
        continue;
      }
      if (tol > 0) {
        if (std::isinf(want)) {
          EXPECT_EQ(got[k], want) << "act " << int(e.act) << ", x = " << xs[i + k];
        } else {
          EXPECT_LE(std::fabs(double(got[k]) - want), tol * std::max(1.0, std::fabs(double(want))))
              << "act " << int(e.act) << ", x = " << xs[i + k] << ": got " << got[k] << ", apply_act gives " << want;
        }
        continue;
      }
      uint32_t g, w;
      std::memcpy(&g, &got[k], 4);
      std::memcpy(&w, &want, 4);
      EXPECT_EQ(g, w) << "act " << int(e.act) << ", x = " << xs[i + k] << ": got " << got[k] << ", apply_act gives " << want;
    }
  }
}

}  // namespace systolic::kernels::testing
