// Softmax and layer normalization over rows, on a vector traits struct T (kernels/gemm/vec_*.h
// plus round (to nearest) and pow2 (2^n, integral n in [-126, 127])). Include only from ISA
// files; everything here has internal linkage.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "base/threadpool.h"
#include "kernels/norm/norm.h"

namespace systolic::kernels::norm {
namespace {

// exp(x) for x <= 0 (softmax's x - max), ~2e-7 relative: x = n*ln2 + r with |r| <= ln2/2 (ln2 in
// two parts so n*ln2_hi is exact), then degree-6 Taylor for exp(r) (next term < 1.3e-7).
// Below -87 it returns ~1e-38 instead of 0, which no softmax sum can notice.
template <class T>
inline typename T::V exp_neg(typename T::V x) {
  using V = typename T::V;
  x = T::max(x, T::set1(-87.f));
  const V n = T::round(T::mul(x, T::set1(1.44269504f)));
  V r = T::fma(n, T::set1(-0.693359375f), x);
  r = T::fma(n, T::set1(2.12194440e-4f), r);
  V p = T::set1(1.f / 720);
  p = T::fma(p, r, T::set1(1.f / 120));
  p = T::fma(p, r, T::set1(1.f / 24));
  p = T::fma(p, r, T::set1(1.f / 6));
  p = T::fma(p, r, T::set1(0.5f));
  p = T::fma(p, r, T::set1(1.f));
  p = T::fma(p, r, T::set1(1.f));
  return T::mul(p, T::pow2(n));
}

template <class T>
inline void softmax_row(int64_t n, const float* x, float* y) {
  using V = typename T::V;
  constexpr int W = T::W;
  const int64_t full = n / W * W;
  const int tail = int(n - full);
  V vm = T::set1(-std::numeric_limits<float>::infinity());
  for (int64_t j = 0; j < full; j += W) vm = T::max(vm, T::load(x + j));
  float lanes[W];
  T::store(lanes, vm);
  float mx = lanes[0];
  for (int l = 1; l < W; ++l) mx = std::max(mx, lanes[l]);
  for (int64_t j = full; j < n; ++j) mx = std::max(mx, x[j]);
  const V vmx = T::set1(mx);
  V vs = T::zero();
  for (int64_t j = 0; j < full; j += W) {
    const V e = exp_neg<T>(T::sub(T::load(x + j), vmx));
    T::store(y + j, e);
    vs = T::add(vs, e);
  }
  float sum = T::hsum(vs);
  if (tail) {
    T::store_n(y + full, exp_neg<T>(T::sub(T::load_n(x + full, tail), vmx)), tail);
    for (int64_t j = full; j < n; ++j) sum += y[j];  // only the stored lanes
  }
  const V inv = T::set1(1.f / sum);
  for (int64_t j = 0; j < full; j += W) T::store(y + j, T::mul(T::load(y + j), inv));
  if (tail) T::store_n(y + full, T::mul(T::load_n(y + full, tail), inv), tail);
}

template <class T>
inline void layer_norm_row(int64_t n, float eps, const float* x, const float* scale, const float* bias, float* y) {
  using V = typename T::V;
  constexpr int W = T::W;
  const int64_t full = n / W * W;
  const int tail = int(n - full);
  V s0 = T::zero(), s1 = T::zero();  // two chains: the adds' latency, not their count, bounds this
  int64_t j = 0;
  for (; j + 2 * W <= full; j += 2 * W) {
    s0 = T::add(s0, T::load(x + j));
    s1 = T::add(s1, T::load(x + j + W));
  }
  for (; j < full; j += W) s0 = T::add(s0, T::load(x + j));
  float sum = T::hsum(T::add(s0, s1));
  for (j = full; j < n; ++j) sum += x[j];
  const float mean = sum / float(n);
  const V vmean = T::set1(mean);
  V q0 = T::zero(), q1 = T::zero();
  for (j = 0; j + 2 * W <= full; j += 2 * W) {
    const V d0 = T::sub(T::load(x + j), vmean), d1 = T::sub(T::load(x + j + W), vmean);
    q0 = T::fma(d0, d0, q0);
    q1 = T::fma(d1, d1, q1);
  }
  for (; j < full; j += W) {
    const V d = T::sub(T::load(x + j), vmean);
    q0 = T::fma(d, d, q0);
  }
  float sq = T::hsum(T::add(q0, q1));
  for (j = full; j < n; ++j) sq += (x[j] - mean) * (x[j] - mean);
  const V inv = T::set1(1.f / std::sqrt(sq / float(n) + eps));
  for (j = 0; j < full; j += W) {
    const V t = T::mul(T::mul(T::sub(T::load(x + j), vmean), inv), T::load(scale + j));
    T::store(y + j, bias ? T::add(t, T::load(bias + j)) : t);
  }
  if (tail) {
    const V t = T::mul(T::mul(T::sub(T::load_n(x + full, tail), vmean), inv), T::load_n(scale + full, tail));
    T::store_n(y + full, bias ? T::add(t, T::load_n(bias + full, tail)) : t, tail);
  }
}

template <class T>
void run(const NormParams& p, const float* x, const float* scale, const float* bias, float* y, pthreadpool_t pool) {
  const int64_t threads = int64_t(pthreadpool_get_threads_count(pool));
  const int64_t tile = std::max<int64_t>(1, p.rows / (8 * threads));
  auto task = [&](std::size_t r0, std::size_t count) {
    for (int64_t r = int64_t(r0); r < int64_t(r0 + count); ++r) {
      if (p.kind == NormKind::softmax) softmax_row<T>(p.n, x + r * p.n, y + r * p.n);
      else layer_norm_row<T>(p.n, p.epsilon, x + r * p.n, scale, bias, y + r * p.n);
    }
  };
  // Flush to zero: softmax's tiny probabilities would otherwise leave denormals that slow this
  // loop's scaling and every consumer (the attention's P.V matmul) many times over.
  pthreadpool_parallelize_1d_tile_1d(pool, task, std::size_t(p.rows), std::size_t(tile),
                                     kPoolFlags | PTHREADPOOL_FLAG_DISABLE_DENORMALS);
}

}  // namespace
}  // namespace systolic::kernels::norm
