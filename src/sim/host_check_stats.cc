// Quantiles and the bootstrap over timed runs behind `simulate --check`'s ranking uncertainty.
#include "sim/host_check_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace systolic::sim {

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = std::clamp(q, 0.0, 1.0) * double(v.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - double(lo)) * (v[hi] - v[lo]);
}

RunBootstrap bootstrap_runs(const std::vector<std::vector<double>>& runs, int resamples, uint64_t seed) {
  RunBootstrap b;
  std::size_t n = 0;
  for (const auto& r : runs) n = std::max(n, r.size());
  b.runs = static_cast<int>(n);
  b.resamples = n > 0 ? std::max(0, resamples) : 0;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> pick(0, n > 0 ? n - 1 : 0);
  std::vector<std::size_t> idx(n);
  std::vector<double> x;
  b.medians.assign(static_cast<std::size_t>(b.resamples), std::vector<double>(runs.size(), 0.0));
  for (int s = 0; s < b.resamples; ++s) {
    for (auto& i : idx) i = pick(rng);
    for (std::size_t l = 0; l < runs.size(); ++l) {
      if (runs[l].size() != n) continue;  // not measured in every run: stays 0
      x.clear();
      for (std::size_t i : idx) x.push_back(runs[l][i]);
      b.medians[s][l] = quantile(x, 0.5);
    }
  }
  return b;
}

std::vector<double> top_share(const RunBootstrap& b, int top) {
  const std::size_t layers = b.medians.empty() ? 0 : b.medians[0].size();
  std::vector<double> share(layers, 0.0);
  if (b.resamples == 0 || top <= 0) return share;
  std::vector<std::size_t> order(layers);
  for (const auto& m : b.medians) {
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return m[x] > m[y]; });
    for (std::size_t i = 0; i < order.size() && i < static_cast<std::size_t>(top); ++i) share[order[i]] += 1;
  }
  for (auto& s : share) s /= b.resamples;
  return share;
}

double order_share(const RunBootstrap& b, int a, int b_layer) {
  if (b.resamples == 0) return 0;
  int n = 0;
  for (const auto& m : b.medians) n += m[static_cast<std::size_t>(a)] >= m[static_cast<std::size_t>(b_layer)];
  return double(n) / b.resamples;
}

namespace {

// 1-based ranks; a run of equal values shares the mean of the ranks it spans.
std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<std::size_t> order(v.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return v[x] < v[y]; });
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < order.size();) {
    std::size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    for (std::size_t k = i; k <= j; ++k) r[order[k]] = 0.5 * double(i + j) + 1;
    i = j + 1;
  }
  return r;
}

}  // namespace

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const std::size_t n = std::min(a.size(), b.size());
  if (n < 2) return 0;
  const std::vector<double> ra = ranks({a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n)}),
                            rb = ranks({b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n)});
  const double mean = 0.5 * double(n + 1);  // both rank sets average (n + 1) / 2
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sab += (ra[i] - mean) * (rb[i] - mean);
    saa += (ra[i] - mean) * (ra[i] - mean);
    sbb += (rb[i] - mean) * (rb[i] - mean);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0;
}

}  // namespace systolic::sim
