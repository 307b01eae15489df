// How sure the measurement of `simulate --check` is of its own per-layer ranking: per-layer
// quantiles over the timed runs, and a bootstrap over whole runs (every layer of a resampled run
// comes along, so a burst of load that slowed one run weighs on all of its layers alike).
#pragma once
#include <cstdint>
#include <vector>

namespace systolic::sim {

// The q-quantile (0..1) of v with linear interpolation between order statistics; 0 when empty.
double quantile(std::vector<double> v, double q);

// Per-layer medians of `resamples` bootstrap resamples of the runs: runs[layer][run] are the
// layer's times in each timed run (every layer has the same runs; a layer with none keeps 0).
// Resample b draws n run indices with replacement (seeded: the same input gives the same
// result) and takes each layer's median over them: medians[b][layer].
struct RunBootstrap {
  int resamples = 0, runs = 0;
  std::vector<std::vector<double>> medians;
};
RunBootstrap bootstrap_runs(const std::vector<std::vector<double>>& runs, int resamples, uint64_t seed = 1);

// For each layer, the share of resamples (0..1) in which its median is among the `top` largest
// (ties at the cut broken by layer index, as a stable sort by time would).
std::vector<double> top_share(const RunBootstrap& b, int top);

// The share of resamples (0..1) in which layer a's median is at least layer b's.
double order_share(const RunBootstrap& b, int a, int b_layer);

// Spearman's rank correlation of a and b (same length): the Pearson correlation of their ranks,
// tied values sharing their average rank. 0 when fewer than two pairs or either side is constant.
double spearman(const std::vector<double>& a, const std::vector<double>& b);

// A measured order the runs cannot establish: `a` ranks at or above `b` in at least this share
// of resamples although the medians over all runs put b above a (a one-sided 95% bound).
constexpr double kInseparableShare = 0.05;

}  // namespace systolic::sim
