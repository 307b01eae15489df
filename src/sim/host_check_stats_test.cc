// The ranking statistics of `simulate --check`: quantiles, the bootstrap over whole runs, top
// shares and pairwise order shares, on data whose answers follow from symmetry or construction.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/host_check_stats.h"

namespace systolic::sim {
namespace {

TEST(HostCheckStats, QuantilesInterpolateBetweenOrderStatistics) {
  EXPECT_DOUBLE_EQ(quantile({}, 0.5), 0.0);
  EXPECT_DOUBLE_EQ(quantile({7}, 0.25), 7.0);
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 0.5), 2.5);   // unsorted input
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 0.25), 1.75);  // 1 + 0.75 * (2 - 1)
  EXPECT_DOUBLE_EQ(quantile({4, 1, 3, 2}, 1.0), 4.0);
  EXPECT_DOUBLE_EQ(quantile({5, 1, 9}, 0.5), 5.0);
}

TEST(HostCheckStats, ConstantLayersRankTheSameInEveryResample) {
  const std::vector<std::vector<double>> runs = {{2, 2, 2, 2, 2}, {1, 1, 1, 1, 1}, {3, 3, 3, 3, 3}};
  const RunBootstrap b = bootstrap_runs(runs, 200);
  EXPECT_EQ(b.resamples, 200);
  EXPECT_EQ(b.runs, 5);
  const std::vector<double> s1 = top_share(b, 1), s2 = top_share(b, 2);
  EXPECT_EQ(s1, (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(s2, (std::vector<double>{1, 0, 1}));
  EXPECT_DOUBLE_EQ(order_share(b, 0, 1), 1.0);
  EXPECT_DOUBLE_EQ(order_share(b, 1, 0), 0.0);
}

TEST(HostCheckStats, LayersThatSwapEveryRunAreATie) {
  // a and c trade 1 and 3 from run to run (a is 3 in the 10 odd runs of 21): in a resample
  // exactly one of them has the larger median, a when more than 10 of its 21 draws are odd runs,
  // which happens with the binomial probability P(X >= 11), X ~ B(21, 10/21).
  std::vector<double> a, c;
  for (int r = 0; r < 21; ++r) {
    a.push_back(r % 2 ? 3 : 1);
    c.push_back(r % 2 ? 1 : 3);
  }
  double expected = 0;
  for (int k = 11; k <= 21; ++k) {
    double binom = 1;
    for (int i = 0; i < k; ++i) binom = binom * (21 - i) / (i + 1);
    expected += binom * std::pow(10.0 / 21, k) * std::pow(11.0 / 21, 21 - k);
  }
  const RunBootstrap b = bootstrap_runs({a, c}, 4000, 7);
  const double ac = order_share(b, 0, 1), ca = order_share(b, 1, 0);
  EXPECT_DOUBLE_EQ(ac + ca, 1.0);
  EXPECT_NEAR(ac, expected, 0.035);  // 4000 resamples: standard error 0.008
  const std::vector<double> s = top_share(b, 1);
  EXPECT_DOUBLE_EQ(s[0], ac);
  EXPECT_DOUBLE_EQ(s[0] + s[1], 1.0);
  EXPECT_GT(ac, kInseparableShare);
}

TEST(HostCheckStats, ABurstOfLoadOnWholeRunsDoesNotReorderLayers) {
  // b is 2% faster than a in every run, while the runs themselves vary by +-40% (load from
  // another process slows every layer of a run alike). Resampling whole runs keeps a above b in
  // every resample; resampling each layer's runs independently would not.
  std::vector<double> a, c;
  for (int r = 0; r < 25; ++r) {
    const double load = 1.0 + 0.4 * ((r * 37) % 11 - 5) / 5.0;
    a.push_back(1.0 * load);
    c.push_back(0.98 * load);
  }
  const RunBootstrap b = bootstrap_runs({a, c}, 1000, 3);
  EXPECT_DOUBLE_EQ(order_share(b, 1, 0), 0.0);
  EXPECT_DOUBLE_EQ(order_share(b, 0, 1), 1.0);
}

TEST(HostCheckStats, SameSeedSameResamplesAndMissingRunsStayZero) {
  const std::vector<std::vector<double>> runs = {{1, 5, 2, 8, 3}, {4, 4, 1, 2, 9}, {}};
  const RunBootstrap x = bootstrap_runs(runs, 50, 11), y = bootstrap_runs(runs, 50, 11);
  EXPECT_EQ(x.medians, y.medians);
  for (const auto& m : x.medians) EXPECT_DOUBLE_EQ(m[2], 0.0);
  EXPECT_EQ(bootstrap_runs({{}, {}}, 50).resamples, 0);  // no runs: nothing to resample
  EXPECT_DOUBLE_EQ(order_share(bootstrap_runs({{}, {}}, 50), 0, 1), 0.0);
}

TEST(HostCheckStats, SpearmanIsThePearsonCorrelationOfRanks) {
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3}, {10, 20, 30}), 1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3}, {0.3, 0.2, 0.1}), -1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4, 5}, {2, 1, 4, 3, 5}), 0.8);  // 1 - 6 * 4 / (5 * 24), no ties
  // Ties share their mean rank: b's ranks are 1, 2, 3.5, 5, 3.5, so rho = 8 / sqrt(10 * 9.5).
  EXPECT_NEAR(spearman({1, 2, 3, 4, 5}, {5, 6, 7, 8, 7}), 8 / std::sqrt(95.0), 1e-12);
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3}, {4, 4, 4}), 0.0);  // a constant side orders nothing
  EXPECT_DOUBLE_EQ(spearman({1}, {1}), 0.0);
  EXPECT_DOUBLE_EQ(spearman({1, 100, 1000}, {1, 2, 3}), 1.0);  // only the order counts
}

}  // namespace
}  // namespace systolic::sim
