// `simulate --target host --check`: simulate the plan on the measured host preset, time the
// same plan per step in a profiling Session, and report per-step and total errors and top-5.
#include "tools/host_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "runtime/session.h"
#include "tools/random_inputs.h"

namespace systolic::tools {
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
                               double measured_total_ms, int top) {
  CheckReport c;
  c.batch = r.batch;
  std::map<std::string, const sim::LayerCost*> sim_by_name;
  for (const auto& l : r.layers) sim_by_name[l.name] = &l;
  std::set<std::string> seen;
  for (const auto& s : steps) {
    CheckLayer l{s.name, s.op, 0, s.ms, 0};
    if (auto it = sim_by_name.find(s.name); it != sim_by_name.end()) l.predicted_ms = it->second->time_us / 1e3;
    l.error_pct = error_pct(l.predicted_ms, l.measured_ms);
    seen.insert(s.name);
    c.layers.push_back(l);
  }
  for (const auto& l : r.layers)  // simulated but never run (should not happen for a plan)
    if (!seen.count(l.name)) c.layers.push_back({l.name, l.op, l.time_us / 1e3, 0, 0});
  c.predicted_ms = r.latency_us / 1e3;
  c.measured_ms = measured_total_ms;
  c.error_pct = error_pct(c.predicted_ms, c.measured_ms);
  c.top_predicted = top_names(c.layers, &CheckLayer::predicted_ms, top);
  c.top_measured = top_names(c.layers, &CheckLayer::measured_ms, top);
  c.top_match = std::set<std::string>(c.top_predicted.begin(), c.top_predicted.end()) ==
                std::set<std::string>(c.top_measured.begin(), c.top_measured.end());
  c.top_match_ties = c.top_match;
  if (!c.top_match && !c.top_predicted.empty() && c.top_measured.size() == c.top_predicted.size()) {
    std::map<std::string, double> pred;
    for (const auto& l : c.layers) pred[l.name] = l.predicted_ms;
    const double last = pred[c.top_predicted.back()];
    auto tied = [&](double v) { return std::abs(v - last) <= 1e-9 * std::max(1.0, last); };
    const std::set<std::string> measured(c.top_measured.begin(), c.top_measured.end());
    bool ok = true;
    for (const auto& [name, v] : pred) {
      if (v > last && !tied(v) && !measured.count(name)) ok = false;  // a sure top layer missing
      if (measured.count(name) && v < last && !tied(v)) ok = false;   // a measured one below the cut
    }
    c.top_match_ties = ok;
  }
  return c;
}

Expected<CheckReport> check_host(std::shared_ptr<const plan::Program> p, const CheckOptions& o) {
  runtime::SessionOptions so;
  so.threads = o.threads;
  auto session = runtime::Session::create(p, so);
  if (!session.ok()) return session.status();
  runtime::Session& s = **session;
  // Measure the machine on the session's thread count, then simulate (fp32: what runs here).
  const target::HostMeasurements hm = measure_host(*p, s.threads());
  const target::Target t = target::host_target(host_cpu(), hm);
  sim::SimOptions sopt;
  sopt.precision = "fp32";
  auto r = sim::simulate_program(*p, t, sopt);
  if (!r.ok()) return r.status();

  IoBuffers io = make_io_buffers(s, 1);
  for (int i = 0; i < o.warmup; ++i) SYSTOLIC_RETURN_IF_ERROR(s.run_into(io.in_ptrs, io.out_ptrs));
  const int iters = std::max(1, o.iters);
  s.set_trace(static_cast<std::size_t>(iters));
  for (int i = 0; i < iters; ++i) SYSTOLIC_RETURN_IF_ERROR(s.run_into(io.in_ptrs, io.out_ptrs));
  const auto prof = s.profile();
  std::vector<std::vector<double>> per_step(prof.size());
  std::vector<double> runs;
  for (const auto& e : s.trace()) {
    if (e.step < 0) runs.push_back(e.dur_ns / 1e6);
    else per_step[static_cast<std::size_t>(e.step)].push_back(e.dur_ns / 1e6);
  }
  std::vector<MeasuredStep> steps;
  for (std::size_t k = 0; k < prof.size(); ++k) {
    // The simulator names an unnamed node "<Op>_<index>"; steps are the plan's nodes in order.
    const std::string name = prof[k].name.empty() ? prof[k].op + "_" + std::to_string(k) : prof[k].name;
    steps.push_back({name, prof[k].op, median(per_step[k])});
  }
  CheckReport c = compare_prediction(*r, steps, median(runs));
  c.threads = s.threads();
  c.iters = iters;
  c.host = hm;
  return c;
}

std::string format_check(const CheckReport& c) {
  std::string out;
  char buf[512];
  const auto& h = c.host;
  std::snprintf(buf, sizeof buf,
                "host (measured, %d threads): fp32 peak %.1f GFLOP/s, memcpy %.1f GB/s, conv calibration %.0f%% of peak "
                "(%dx%d tile), pool dispatch %.2f us\n\n",
                c.threads, h.fp32_peak_gflops, h.dram_gbs, 100 * h.conv_efficiency, h.tile_rows, h.tile_cols, h.launch_us);
  out += buf;
  if (h.tap_setup_cycles >= 0) {
    std::snprintf(buf, sizeof buf,
                  "conv kernel: tap setup %.1f cycles/tile/panel/tap, row gather %.1f cycles/tile/row; "
                  "read L2 %.0f GB/s, L3 %.0f GB/s\n\n",
                  h.tap_setup_cycles, h.gather_cycles, h.l2_read_gbs, h.l3_read_gbs);
    out.pop_back();
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "%-30s %-18s %12s %12s %9s\n", "layer", "op", "predicted ms", "measured ms", "error");
  out += buf;
  for (const auto& l : c.layers) {
    std::snprintf(buf, sizeof buf, "%-30s %-18s %12.3f %12.3f %8.1f%%\n", l.name.substr(0, 30).c_str(), l.op.c_str(),
                  l.predicted_ms, l.measured_ms, l.error_pct);
    out += buf;
  }
  std::snprintf(buf, sizeof buf, "\nlatency   predicted %.3f ms, measured %.3f ms (median of %d runs, batch %lld): error %+.1f%%\n",
                c.predicted_ms, c.measured_ms, c.iters, static_cast<long long>(c.batch), c.error_pct);
  out += buf;
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& n : v) s += (s.empty() ? "" : ", ") + n;
    return s;
  };
  out += "top-5     predicted: " + list(c.top_predicted) + "\n";
  out += "          measured:  " + list(c.top_measured) + "\n";
  out += std::string("          same set:  ") +
         (c.top_match ? "yes" : c.top_match_ties ? "no, but yes up to exact ties in the prediction" : "no") + "\n";
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
               {"tap_setup_cycles", c.host.tap_setup_cycles}, {"gather_cycles", c.host.gather_cycles},
               {"l2_read_gbs", c.host.l2_read_gbs}, {"l3_read_gbs", c.host.l3_read_gbs}};
  j["layers"] = nlohmann::json::array();
  for (const auto& l : c.layers)
    j["layers"].push_back({{"name", l.name}, {"op", l.op}, {"predicted_ms", l.predicted_ms},
                           {"measured_ms", l.measured_ms}, {"error_pct", l.error_pct}});
  j["predicted_ms"] = c.predicted_ms;
  j["measured_ms"] = c.measured_ms;
  j["error_pct"] = c.error_pct;
  j["top5_predicted"] = c.top_predicted;
  j["top5_measured"] = c.top_measured;
  j["top5_match"] = c.top_match;
  j["top5_match_up_to_ties"] = c.top_match_ties;
  return j;
}

}  // namespace systolic::tools
