// `simulate --target host --check`: the comparison arithmetic (errors, the verdict, top-5 sets)
// on fixed numbers, and the whole check on a small conv model (fields present, errors consistent).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tests/graph_builder.h"
#include "sim/host_check.h"
#include "sim/host_check_stats.h"

namespace systolic::sim {
namespace {

sim::LayerCost layer(const std::string& name, double us) {
  sim::LayerCost l;
  l.name = name;
  l.time_us = us;
  return l;
}

TEST(HostCheck, ErrorsAndTopSetsAreComputedFromTheNumbers) {
  EXPECT_DOUBLE_EQ(error_pct(1.2, 1.0), 20.0);
  EXPECT_DOUBLE_EQ(error_pct(0.5, 2.0), -75.0);
  EXPECT_DOUBLE_EQ(error_pct(1.0, 0.0), 0.0);
  sim::SimReport r;
  r.batch = 1;
  for (int i = 0; i < 6; ++i) r.layers.push_back(layer("l" + std::to_string(i), 1000.0 * (i + 1)));
  r.latency_us = 21000;  // 1 + 2 + ... + 6 ms
  std::vector<MeasuredStep> steps;
  for (int i = 0; i < 6; ++i) steps.push_back({"l" + std::to_string(i), "Conv", 2.0 * (i + 1), {}});
  steps.push_back({"reshape", "Reshape", 0.5, {}});  // a step the simulator treats as free
  CheckReport c = compare_prediction(r, steps, 42.5, 5);
  ASSERT_EQ(c.layers.size(), 7u);
  EXPECT_DOUBLE_EQ(c.layers[0].predicted_ms, 1.0);
  EXPECT_DOUBLE_EQ(c.layers[0].measured_ms, 2.0);
  EXPECT_DOUBLE_EQ(c.layers[0].error_pct, -50.0);
  EXPECT_DOUBLE_EQ(c.layers[6].predicted_ms, 0.0);
  EXPECT_DOUBLE_EQ(c.layers[6].error_pct, -100.0);
  EXPECT_DOUBLE_EQ(c.predicted_ms, 21.0);
  EXPECT_DOUBLE_EQ(c.measured_ms, 42.5);
  EXPECT_NEAR(c.error_pct, 100.0 * (21.0 - 42.5) / 42.5, 1e-9);
  // The steps' medians: 2 + 4 + ... + 12 + 0.5 ms, printed beside the median run.
  EXPECT_DOUBLE_EQ(c.steps_ms, 42.5);
  EXPECT_DOUBLE_EQ(compare_prediction(r, steps, 50.0, 5).steps_ms, 42.5);  // not the median run
  EXPECT_NE(format_check(c).find("the layers' medians sum to 42.500 ms: error -50.6% against that"), std::string::npos);
  EXPECT_DOUBLE_EQ(check_json(c)["steps_ms"].get<double>(), 42.5);
  EXPECT_EQ(c.top_predicted, (std::vector<std::string>{"l5", "l4", "l3", "l2", "l1"}));
  EXPECT_EQ(c.top_measured, c.top_predicted);
  EXPECT_TRUE(c.top_match);
  steps[0].ms = 100;  // now l0 is the most expensive measured step
  EXPECT_FALSE(compare_prediction(r, steps, 42.5, 5).top_match);
  EXPECT_FALSE(compare_prediction(r, steps, 42.5, 5).top_match_ties);
  // l0 predicted exactly as long as l1 (5th place): either may be the 5th.
  r.layers[0].time_us = 2000;
  steps[0].ms = 2.5;  // measured l5 l4 l3 l2 l1; the prediction lists l0 (tied with l1) 5th
  const CheckReport t = compare_prediction(r, steps, 42.5, 5);
  EXPECT_FALSE(t.top_match);
  EXPECT_TRUE(t.top_match_ties);
  EXPECT_EQ(t.top_overlap, 4);
  // No per-run times: the measurement cannot vouch for a tie.
  EXPECT_FALSE(t.top_match_noise);
  ASSERT_EQ(t.top_swaps.size(), 1u);
  EXPECT_EQ(t.top_swaps[0].predicted_only, "l0");
  EXPECT_EQ(t.top_swaps[0].measured_only, "l1");
  EXPECT_TRUE(t.top_swaps[0].separated);
}

// The verdict: the total within 25% of the median run and the steps' times in nearly the same
// order (Spearman >= 0.9); the top 5 does not enter it.
TEST(HostCheck, VerdictIsTheTotalAndTheRankCorrelation) {
  sim::SimReport r;
  r.batch = 1;
  for (int i = 0; i < 10; ++i) r.layers.push_back(layer("l" + std::to_string(i), 1000.0 * (i + 1)));
  r.latency_us = 55000;
  std::vector<MeasuredStep> steps;
  for (int i = 0; i < 10; ++i) steps.push_back({"l" + std::to_string(i), "Conv", 1.1 * (i + 1), {}});
  // Same order, total 10% over: a pass.
  CheckReport c = compare_prediction(r, steps, 50.0, 5);
  EXPECT_EQ(c.ranked, 10);
  EXPECT_DOUBLE_EQ(c.spearman, 1.0);
  EXPECT_TRUE(c.total_ok && c.rank_ok && c.pass);
  EXPECT_NE(format_check(c).find("verdict   pass: total within 25%: yes (+10.0%); rank correlation >= 0.90: yes (1.000)"),
            std::string::npos)
      << format_check(c);
  // Two neighbours swapped: 1 - 6 * 2 / (10 * 99) = 0.988, still a pass, though the top 5 differs.
  std::swap(steps[4].ms, steps[5].ms);
  c = compare_prediction(r, steps, 50.0, 5);
  EXPECT_NEAR(c.spearman, 1 - 6.0 * 2 / (10 * 99), 1e-12);
  EXPECT_TRUE(c.pass);
  EXPECT_FALSE(c.top_match);
  // The order reversed: the rank correlation fails however close the total is.
  for (int i = 0; i < 10; ++i) steps[i].ms = 1.1 * (10 - i);
  c = compare_prediction(r, steps, 55.0, 5);
  EXPECT_DOUBLE_EQ(c.spearman, -1.0);
  EXPECT_TRUE(c.total_ok);
  EXPECT_FALSE(c.rank_ok);
  EXPECT_FALSE(c.pass);
  // The right order, the total 30% under: fails on the total.
  for (int i = 0; i < 10; ++i) steps[i].ms = 1.1 * (i + 1);
  c = compare_prediction(r, steps, 55.0 / 0.7, 5);
  EXPECT_TRUE(c.rank_ok);
  EXPECT_FALSE(c.total_ok);
  EXPECT_FALSE(c.pass);
  const auto j = check_json(c);
  EXPECT_DOUBLE_EQ(j["spearman"].get<double>(), 1.0);
  EXPECT_FALSE(j["verdict"]["pass"].get<bool>());
  EXPECT_FALSE(j["verdict"]["total_ok"].get<bool>());
  EXPECT_TRUE(j["verdict"]["rank_ok"].get<bool>());
  EXPECT_EQ(j["ranked_steps"].get<int>(), 10);
}

// Six layers predicted 1..6 ms; measured over 21 runs, l0 and l1 compete for 5th place.
std::vector<MeasuredStep> noisy_steps(bool l0_always_above_l1) {
  std::vector<MeasuredStep> steps;
  for (int i = 0; i < 6; ++i) {
    MeasuredStep s{"l" + std::to_string(i), "Conv", 0, {}};
    for (int run = 0; run < 21; ++run) {
      double ms = 2.0 * (i + 1);
      if (i == 0) ms = l0_always_above_l1 ? 4.2 : (run % 2 ? 4.5 : 3.5);  // l1 is 4.0 every run
      s.runs_ms.push_back(ms);
    }
    std::vector<double> v = s.runs_ms;
    std::sort(v.begin(), v.end());
    s.ms = v[v.size() / 2];
    steps.push_back(s);
  }
  return steps;
}

TEST(HostCheck, ASwapCountsAsATieOnlyWhenTheRunsCannotOrderThePair) {
  sim::SimReport r;
  r.batch = 1;
  for (int i = 0; i < 6; ++i) r.layers.push_back(layer("l" + std::to_string(i), 1000.0 * (i + 1)));
  r.latency_us = 21000;
  // l0 is 4.5 ms in 10 runs and 3.5 ms in 11: its median (3.5) is below l1's 4.0, but a
  // resample often has more 4.5s (about 41% of them). The prediction puts l1 5th: a match.
  CheckReport m = compare_prediction(r, noisy_steps(false), 40, 5);
  EXPECT_TRUE(m.top_match);
  EXPECT_TRUE(m.top_match_noise);
  EXPECT_TRUE(m.top_swaps.empty());
  // Predict l0 above l1: strictly a miss, but the runs cannot tell the two apart.
  r.layers[0].time_us = 2500;
  CheckReport t = compare_prediction(r, noisy_steps(false), 40, 5);
  EXPECT_FALSE(t.top_match);
  EXPECT_FALSE(t.top_match_ties);  // not an exact tie in the prediction
  EXPECT_TRUE(t.top_match_noise);
  ASSERT_EQ(t.top_swaps.size(), 1u);
  EXPECT_EQ(t.top_swaps[0].predicted_only, "l0");
  EXPECT_EQ(t.top_swaps[0].measured_only, "l1");
  EXPECT_FALSE(t.top_swaps[0].separated);
  EXPECT_GT(t.top_swaps[0].share, kInseparableShare);
  EXPECT_GT(t.layers[0].top_share, 0.1);
  EXPECT_LT(t.layers[0].top_share, 0.9);
  EXPECT_DOUBLE_EQ(t.layers[5].top_share, 1.0);  // 12 ms, far above everything
  EXPECT_DOUBLE_EQ(t.layers[0].q25_ms, 3.5);
  EXPECT_DOUBLE_EQ(t.layers[0].q75_ms, 4.5);
  // l0 measured 4.2 ms in every run, l1 4.0: the runs do order them, and predicting l1 above l0
  // (1 and 2 ms) is a miss in both verdicts: l1 never ranks at or above l0.
  r.layers[0].time_us = 1000;
  CheckReport s = compare_prediction(r, noisy_steps(true), 40, 5);
  EXPECT_FALSE(s.top_match);
  EXPECT_FALSE(s.top_match_noise);
  ASSERT_EQ(s.top_swaps.size(), 1u);
  EXPECT_TRUE(s.top_swaps[0].separated);
  EXPECT_DOUBLE_EQ(s.top_swaps[0].share, 0.0);
  const auto j = check_json(s);
  EXPECT_FALSE(j["top5_match"].get<bool>());
  EXPECT_FALSE(j["top5_match_within_noise"].get<bool>());
  EXPECT_EQ(j["top5_swaps"].size(), 1u);
  EXPECT_EQ(j["top5_overlap"].get<int>(), 4);
}

TEST(HostCheck, SmallModelReportsEveryField) {
  testing::GraphBuilder b;
  const int x = b.input("image", {1, 16, 32, 32});
  const int c1 = b.node(ir::Op::Conv, {x, b.weights("w1", {32, 16, 3, 3})}, 1, "conv_a")[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  const int r = b.node(ir::Op::Relu, {c1}, 1, "relu_a")[0];
  const int p = b.node(ir::Op::MaxPool, {r}, 1, "pool_a")[0];
  b.last().set_ints("kernel_shape", {2, 2});
  b.last().set_ints("strides", {2, 2});
  const int c2 = b.node(ir::Op::Conv, {p, b.weights("w2", {32, 32, 1, 1})}, 1, "conv_b")[0];
  b.output(c2);
  auto prog = plan::compile(b.g, plan::CompileOptions{});
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  CheckOptions o;
  o.threads = 1;
  o.iters = 3;
  o.warmup = 1;
  auto c = check_host(*prog, o);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->threads, 1);
  EXPECT_EQ(c->iters, 3);
  EXPECT_GT(c->host.fp32_peak_gflops, 0);
  EXPECT_GT(c->host.dram_gbs, 0);
  EXPECT_GE(c->host.launch_us, 0);
  EXPECT_GT(c->predicted_ms, 0);
  EXPECT_GT(c->measured_ms, 0);
  EXPECT_NEAR(c->error_pct, 100 * (c->predicted_ms - c->measured_ms) / c->measured_ms, 1e-9);
  bool saw_a = false, saw_b = false;
  for (const auto& l : c->layers) {
    saw_a |= l.name == "conv_a";
    saw_b |= l.name == "conv_b";
    if (l.name == "conv_a" || l.name == "conv_b") {
      EXPECT_GT(l.predicted_ms, 0) << l.name;
      EXPECT_GT(l.measured_ms, 0) << l.name;
      EXPECT_NEAR(l.error_pct, 100 * (l.predicted_ms - l.measured_ms) / l.measured_ms, 1e-9) << l.name;
    }
  }
  EXPECT_TRUE(saw_a && saw_b);
  EXPECT_FALSE(c->top_predicted.empty());
  EXPECT_EQ(c->top_predicted.size(), c->top_measured.size());
  const auto j = check_json(*c);
  for (const char* k : {"layers", "predicted_ms", "measured_ms", "error_pct", "spearman", "verdict", "top5_predicted", "top5_measured",
                        "top5_match", "top5_match_within_noise", "top5_swaps", "bootstrap", "host"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_NE(format_check(*c).find("same set"), std::string::npos);
  for (const char* k : {"act_dram_gbs", "reorder_elem_ns", "strided_step_cycles"}) EXPECT_TRUE(j["host"].contains(k)) << k;
  // Calibrated (an igemm plan), the rounds timed the runtime's Reorder too.
  if (c->host.tap_setup_cycles >= 0) {
    EXPECT_GT(c->host.reorder_elem_ns, 0);
    EXPECT_NE(format_check(*c).find(" ns/element"), std::string::npos);
  }
}

}  // namespace
}  // namespace systolic::sim
