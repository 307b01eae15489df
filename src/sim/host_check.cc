// `simulate --target host --check`: simulate the plan on the measured host preset, time the
// same plan per step in a profiling Session, and report per-step and total errors, the rank
// correlation of the steps' times (the verdict: total within 25%, Spearman >= 0.9) and top-5.
#include "sim/host_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "runtime/random_tensor.h"
#include "runtime/session.h"
#include "sim/host_check_calibrator.h"
#include "sim/host_check_stats.h"

namespace systolic::sim {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<std::string> top_names(const std::vector<CheckLayer>& ls, double CheckLayer::*field, int top) {
  std::vector<const CheckLayer*> v;
  for (const auto& l : ls) v.push_back(&l);
  std::stable_sort(v.begin(), v.end(), [&](const CheckLayer* a, const CheckLayer* b) { return a->*field > b->*field; });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size() && static_cast<int>(i) < top; ++i) out.push_back(v[i]->name);
  return out;
}

}  // namespace

double error_pct(double predicted, double measured) {
  return measured > 0 ? 100.0 * (predicted - measured) / measured : 0;
}

CheckReport compare_prediction(const sim::SimReport& r, const std::vector<MeasuredStep>& steps,
                               double measured_total_ms, int top, int resamples) {
  CheckReport c;
  c.batch = r.batch;
  std::map<std::string, const sim::LayerCost*> sim_by_name;
  for (const auto& l : r.layers) sim_by_name[l.name] = &l;
  std::set<std::string> seen;
  std::vector<std::vector<double>> runs;  // per CheckLayer
  for (const auto& s : steps) {
    CheckLayer l{s.name, s.op, 0, s.ms, 0};
    if (auto it = sim_by_name.find(s.name); it != sim_by_name.end()) l.predicted_ms = it->second->time_us / 1e3;
    l.error_pct = error_pct(l.predicted_ms, l.measured_ms);
    l.q25_ms = s.runs_ms.empty() ? s.ms : quantile(s.runs_ms, 0.25);
    l.q75_ms = s.runs_ms.empty() ? s.ms : quantile(s.runs_ms, 0.75);
    seen.insert(s.name);
    c.layers.push_back(l);
    runs.push_back(s.runs_ms);
  }
  for (const auto& l : r.layers)  // simulated but never run (should not happen for a plan)
    if (!seen.count(l.name)) {
      c.layers.push_back({l.name, l.op, l.time_us / 1e3, 0, 0});
      runs.emplace_back();
    }
  c.predicted_ms = r.latency_us / 1e3;
  c.measured_ms = measured_total_ms;
  c.error_pct = error_pct(c.predicted_ms, c.measured_ms);
  for (const auto& l : c.layers) c.steps_ms += l.measured_ms;
  std::vector<double> pv, mv;
  for (const auto& l : c.layers)
    if (l.measured_ms > 0) {
      pv.push_back(l.predicted_ms);
      mv.push_back(l.measured_ms);
    }
  c.ranked = static_cast<int>(pv.size());
  c.spearman = spearman(pv, mv);
  c.total_ok = c.measured_ms > 0 && std::abs(c.error_pct) <= kTotalTolerancePct;
  c.rank_ok = c.ranked >= 2 && c.spearman >= kMinSpearman;
  c.pass = c.total_ok && c.rank_ok;
  c.top_predicted = top_names(c.layers, &CheckLayer::predicted_ms, top);
  c.top_measured = top_names(c.layers, &CheckLayer::measured_ms, top);
  const std::set<std::string> pset(c.top_predicted.begin(), c.top_predicted.end()),
      mset(c.top_measured.begin(), c.top_measured.end());
  c.top_match = pset == mset;
  for (const auto& n : pset) c.top_overlap += static_cast<int>(mset.count(n));
  c.top_match_ties = c.top_match;
  if (!c.top_match && !c.top_predicted.empty() && c.top_measured.size() == c.top_predicted.size()) {
    std::map<std::string, double> pred;
    for (const auto& l : c.layers) pred[l.name] = l.predicted_ms;
    const double last = pred[c.top_predicted.back()];
    auto tied = [&](double v) { return std::abs(v - last) <= 1e-9 * std::max(1.0, last); };
    bool ok = true;
    for (const auto& [name, v] : pred) {
      if (v > last && !tied(v) && !mset.count(name)) ok = false;  // a sure top layer missing
      if (mset.count(name) && v < last && !tied(v)) ok = false;   // a measured one below the cut
    }
    c.top_match_ties = ok;
  }
  // The measurement's own uncertainty: resample whole runs and see how often each layer makes
  // the top, and whether each swapped pair keeps its measured order.
  const RunBootstrap b = bootstrap_runs(runs, resamples);
  c.resamples = b.resamples;
  c.runs = b.runs;
  const std::vector<double> share = top_share(b, top);
  std::map<std::string, int> index;
  for (std::size_t i = 0; i < c.layers.size(); ++i) {
    c.layers[i].top_share = share.empty() ? 0 : share[i];
    index.emplace(c.layers[i].name, static_cast<int>(i));
  }
  c.top_match_noise = c.top_match;
  if (!c.top_match) {
    c.top_match_noise = b.resamples > 0;  // without runs the measurement cannot excuse anything
    for (const auto& p : c.top_predicted) {
      if (mset.count(p)) continue;
      for (const auto& m : c.top_measured) {
        if (pset.count(m)) continue;
        TopSwap s{p, m, c.layers[index[p]].measured_ms, c.layers[index[m]].measured_ms, 0, true};
        if (b.resamples > 0) s.share = order_share(b, index[p], index[m]);
        s.separated = b.resamples == 0 || s.share < kInseparableShare;
        c.top_match_noise = c.top_match_noise && !s.separated;
        c.top_swaps.push_back(s);
      }
    }
  }
  return c;
}

Expected<CheckReport> check_host(std::shared_ptr<const plan::Program> p, const CheckOptions& o) {
  runtime::SessionOptions so;
  so.threads = o.threads;
  auto session = runtime::Session::create(p, so);
  if (!session.ok()) return session.status();
  runtime::Session& s = **session;
  // The machine's rates on the session's thread count, before its pool ever spins.
  std::string kernel;
  target::HostMeasurements hm = measure_host_rates(*p, s.threads(), &kernel);
  // The conv calibration runs one round after every timed run, on the session's own pool: the
  // rounds see the load, memory traffic and clock the runs see.
  std::unique_ptr<ConvCalibrator> cal;
  if (kernel.find("igemm") != std::string::npos) {
    cal = std::make_unique<ConvCalibrator>(kernel, s.threads(), s.pool());
    if (!cal->ok()) cal.reset();
  }
  std::vector<runtime::HostTensor> in, out;
  uint64_t seed = 1;
  for (const auto& info : s.inputs()) in.push_back(runtime::random_tensor(info, seed++));
  bool dynamic = false;  // outputs shaped by the run (a dynamic tail) are allocated by it
  for (const auto& info : s.outputs()) {
    dynamic = dynamic || info.dynamic();
    out.push_back(info.dynamic() ? runtime::HostTensor{info.dtype, {0}, {}} : runtime::HostTensor::zeros(info.dtype, info.shape));
  }
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;
  for (const auto& t : in) in_ptrs.push_back(t.data.data());
  for (auto& t : out) out_ptrs.push_back(t.data.data());
  std::vector<runtime::HostTensor> shaped;
  auto run = [&] { return dynamic ? s.run_dynamic(in_ptrs, &shaped) : s.run_into(in_ptrs, out_ptrs); };
  for (int i = 0; i < o.warmup; ++i) SYSTOLIC_RETURN_IF_ERROR(run());
  const int iters = std::max(1, o.iters);
  s.set_trace(static_cast<std::size_t>(iters));
  for (int i = 0; i < iters; ++i) {
    SYSTOLIC_RETURN_IF_ERROR(run());
    if (cal) cal->round();
  }
  for (int i = 0; cal && i < kCalibRounds - iters; ++i) cal->round();  // few runs: enough rounds anyway
  apply_conv_calibration(cal ? solve_calibration_rounds(hm, hm.launch_us, cal->rounds()) : ConvCalibration{}, kernel,
                         &hm);
  // Simulate on the measured host (fp32: what runs here).
  const target::Target t = target::host_target(host_cpu(), hm);
  sim::SimOptions sopt;
  sopt.precision = "fp32";
  auto r = sim::simulate_program(*p, t, sopt);
  if (!r.ok()) return r.status();
  const auto prof = s.profile();
  // Every run times every step, one after the other: per step, its time in each run (by run
  // index, so the bootstrap can resample whole runs).
  std::vector<std::vector<double>> per_step(prof.size(), std::vector<double>(static_cast<std::size_t>(iters), 0.0));
  std::vector<double> runs;
  for (const auto& e : s.trace()) {
    if (e.step < 0) runs.push_back(e.dur_ns / 1e6);
    else if (e.run >= 0 && e.run < iters) per_step[static_cast<std::size_t>(e.step)][static_cast<std::size_t>(e.run)] = e.dur_ns / 1e6;
  }
  std::vector<MeasuredStep> steps;
  for (std::size_t k = 0; k < prof.size(); ++k) {
    if (prof[k].op == "DynamicTail") continue;  // the interpreter's part after the plan: not simulated
    // The simulator names an unnamed node "<Op>_<index>"; steps are the plan's nodes in order.
    const std::string name = prof[k].name.empty() ? prof[k].op + "_" + std::to_string(k) : prof[k].name;
    steps.push_back({name, prof[k].op, median(per_step[k]), per_step[k]});
  }
  CheckReport c = compare_prediction(*r, steps, median(runs));
  c.threads = s.threads();
  c.iters = iters;
  c.host = hm;
  return c;
}

namespace {

std::string list_names(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& n : v) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

std::string format_check(const CheckReport& c) {
  std::string out;
  char buf[1024];  // the conv kernel line runs to ~650 characters
  const auto& h = c.host;
  std::snprintf(buf, sizeof buf,
                "host (measured, %d threads): fp32 peak %.1f GFLOP/s, memcpy %.1f GB/s, conv calibration %.0f%% of peak "
                "(%dx%d tile), pool dispatch %.2f us\n\n",
                c.threads, h.fp32_peak_gflops, h.dram_gbs, 100 * h.conv_efficiency, h.tile_rows, h.tile_cols, h.launch_us);
  out += buf;
  if (h.tap_setup_cycles >= 0) {
    // No depthwise kernel on this ISA: its convs stream at the memcpy bandwidth instead.
    const std::string dw = h.dw_read_gbs > 0 ? "reads " + std::to_string(int(h.dw_read_gbs + 0.5)) + " GB/s, writes " +
                                                   std::to_string(int(h.dw_write_gbs + 0.5)) + " GB/s, " +
                                                   std::to_string(int(h.dw_row_cycles + 0.5)) + " cycles/row of 16 channels"
                                             : "not measured";
    char far[32] = "at DRAM's rate", reorder[32] = "not measured", wino2[32] = "the same for";
    if (h.wino2_float_cycles >= 0) std::snprintf(wino2, sizeof wino2, "%.2f for", h.wino2_float_cycles);
    if (h.act_dram_gbs > 0) std::snprintf(far, sizeof far, "%.1f GB/s", h.act_dram_gbs);
    if (h.reorder_elem_ns > 0) std::snprintf(reorder, sizeof reorder, "%.2f ns/element", h.reorder_elem_ns);
    std::snprintf(buf, sizeof buf,
                  "conv kernel: call %.1f cycles/tile/panel (%.1f storing partial sums), tap setup %.1f cycles/tile/panel/tap "
                  "(%.1f merged), row gather %.1f "
                  "cycles/tile/row, strided rows +%.2f cycles/K step, Winograd transform %.2f cycles/float (%s F(2x2)), "
                  "depthwise %s; "
                  "read L2 %.0f GB/s, L3 %.0f GB/s, DRAM "
                  "%.1f GB/s; re-read of 2/4/8/16 MiB just streamed in %.0f/%.0f/%.0f/%.0f GB/s; activations past "
                  "them %s; reorder %s\n\n",
                  std::max(0.0, h.call_cycles), h.partial_call_cycles >= 0 ? h.partial_call_cycles : std::max(0.0, h.call_cycles),
                  h.tap_setup_cycles, h.merged_setup_cycles >= 0 ? h.merged_setup_cycles : h.tap_setup_cycles,
                  h.gather_cycles, std::max(0.0, h.strided_step_cycles),
                  std::max(0.0, h.wino_float_cycles), wino2, dw.c_str(),
                  h.l2_read_gbs, h.l3_read_gbs, h.dram_read_gbs, h.reread_gbs[0], h.reread_gbs[1], h.reread_gbs[2],
                  h.reread_gbs[3], far, reorder);
    out.pop_back();
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "%-30s %-18s %12s %12s %9s %9s %8s\n", "layer", "op", "predicted ms", "measured ms",
                "error", "IQR", "in top-5");
  out += buf;
  for (const auto& l : c.layers) {
    const double iqr = l.measured_ms > 0 ? 100 * (l.q75_ms - l.q25_ms) / l.measured_ms : 0;
    char share[16] = "";
    if (l.top_share > 0) std::snprintf(share, sizeof share, "%.0f%%", 100 * l.top_share);
    std::snprintf(buf, sizeof buf, "%-30s %-18s %12.3f %12.3f %8.1f%% %8.1f%% %8s\n", l.name.substr(0, 30).c_str(),
                  l.op.c_str(), l.predicted_ms, l.measured_ms, l.error_pct, iqr, share);
    out += buf;
  }
  std::snprintf(buf, sizeof buf,
                "(IQR: interquartile range of the %d runs / median; in top-5: share of %d bootstrap resamples of the "
                "runs with the layer in the measured top 5)\n",
                c.runs, c.resamples);
  out += buf;
  std::snprintf(buf, sizeof buf, "\nlatency   predicted %.3f ms, measured %.3f ms (median of %d runs, batch %lld): error %+.1f%%\n",
                c.predicted_ms, c.measured_ms, c.iters, static_cast<long long>(c.batch), c.error_pct);
  out += buf;
  if (c.steps_ms > 0) {
    std::snprintf(buf, sizeof buf, "          the layers' medians sum to %.3f ms: error %+.1f%% against that\n", c.steps_ms,
                  error_pct(c.predicted_ms, c.steps_ms));
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "ranks     Spearman correlation of predicted and measured times over %d steps: %.3f\n",
                c.ranked, c.spearman);
  out += buf;
  std::snprintf(buf, sizeof buf, "verdict   %s: total within %.0f%%: %s (%+.1f%%); rank correlation >= %.2f: %s (%.3f)\n",
                c.pass ? "pass" : "fail", kTotalTolerancePct, c.total_ok ? "yes" : "no", c.error_pct, kMinSpearman,
                c.rank_ok ? "yes" : "no", c.spearman);
  out += buf;
  out += "top-5     (information; the measured set itself changes from run to run)\n";
  out += "          predicted: " + list_names(c.top_predicted) + "\n";
  out += "          measured:  " + list_names(c.top_measured) + "\n";
  std::snprintf(buf, sizeof buf, "          same set (strict):              %s (%d of %zu)\n", c.top_match ? "yes" : "no",
                c.top_overlap, c.top_measured.size());
  out += buf;
  out += std::string("          same set up to exact ties in the prediction: ") + (c.top_match_ties ? "yes" : "no") + "\n";
  out += std::string("          same set within measurement noise: ") + (c.top_match_noise ? "yes" : "no") + "\n";
  for (const auto& s : c.top_swaps) {
    std::snprintf(buf, sizeof buf, "            %s (measured %.3f ms) >= %s (%.3f ms) in %.1f%% of resamples: %s\n",
                  s.predicted_only.c_str(), s.predicted_only_ms, s.measured_only.c_str(), s.measured_only_ms,
                  100 * s.share, s.separated ? "the runs separate them" : "a tie within the noise");
    out += buf;
  }
  return out;
}

nlohmann::json check_json(const CheckReport& c) {
  nlohmann::json j;
  j["threads"] = c.threads;
  j["iters"] = c.iters;
  j["batch"] = c.batch;
  j["host"] = {{"fp32_peak_gflops", c.host.fp32_peak_gflops}, {"dram_gbs", c.host.dram_gbs},
               {"conv_efficiency", c.host.conv_efficiency}, {"launch_us", c.host.launch_us},
               {"tile", std::to_string(c.host.tile_rows) + "x" + std::to_string(c.host.tile_cols)},
               {"tap_setup_cycles", c.host.tap_setup_cycles}, {"merged_setup_cycles", c.host.merged_setup_cycles},
               {"gather_cycles", c.host.gather_cycles},
               {"strided_step_cycles", c.host.strided_step_cycles}, {"call_cycles", c.host.call_cycles},
               {"partial_call_cycles", c.host.partial_call_cycles},
               {"wino_float_cycles", c.host.wino_float_cycles}, {"wino2_float_cycles", c.host.wino2_float_cycles},
               {"dw_read_gbs", c.host.dw_read_gbs},
               {"dw_write_gbs", c.host.dw_write_gbs}, {"dw_row_cycles", c.host.dw_row_cycles},
               {"l2_read_gbs", c.host.l2_read_gbs}, {"l3_read_gbs", c.host.l3_read_gbs},
               {"dram_read_gbs", c.host.dram_read_gbs}, {"reread_gbs", c.host.reread_gbs},
               {"act_dram_gbs", c.host.act_dram_gbs}, {"reorder_elem_ns", c.host.reorder_elem_ns}};
  j["layers"] = nlohmann::json::array();
  for (const auto& l : c.layers)
    j["layers"].push_back({{"name", l.name}, {"op", l.op}, {"predicted_ms", l.predicted_ms},
                           {"measured_ms", l.measured_ms}, {"error_pct", l.error_pct},
                           {"measured_q25_ms", l.q25_ms}, {"measured_q75_ms", l.q75_ms},
                           {"top5_share", l.top_share}});
  j["predicted_ms"] = c.predicted_ms;
  j["measured_ms"] = c.measured_ms;
  j["error_pct"] = c.error_pct;
  j["steps_ms"] = c.steps_ms;
  j["spearman"] = c.spearman;
  j["ranked_steps"] = c.ranked;
  j["verdict"] = {{"pass", c.pass}, {"total_within_pct", kTotalTolerancePct}, {"total_ok", c.total_ok},
                  {"min_spearman", kMinSpearman}, {"rank_ok", c.rank_ok}};
  j["top5_predicted"] = c.top_predicted;
  j["top5_measured"] = c.top_measured;
  j["top5_match"] = c.top_match;
  j["top5_overlap"] = c.top_overlap;
  j["top5_match_up_to_ties"] = c.top_match_ties;
  j["top5_match_within_noise"] = c.top_match_noise;
  j["top5_swaps"] = nlohmann::json::array();
  for (const auto& s : c.top_swaps)
    j["top5_swaps"].push_back({{"predicted_only", s.predicted_only}, {"measured_only", s.measured_only},
                               {"predicted_only_ms", s.predicted_only_ms}, {"measured_only_ms", s.measured_only_ms},
                               {"share", s.share}, {"separated", s.separated}});
  j["bootstrap"] = {{"resamples", c.resamples}, {"runs", c.runs}, {"inseparable_share", kInseparableShare}};
  return j;
}

}  // namespace systolic::sim
