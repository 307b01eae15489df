// The CLI's computing commands as functions returning what their --json prints (as JSON text;
// the Python side parses it): each calls the library that computes it, with no printing.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nlohmann/json.hpp>

#include "api/internal.h"
#include "api/precision.h"
#include "base/cpu.h"
#include "errors.h"
#include "model.h"
#include "sim/host_check.h"
#include "sim/peak.h"
#include "sim/report.h"
#include "sim/simulate.h"
#include "target/target.h"

namespace systolic::py {
namespace {

namespace pyb = pybind11;

struct SimulateArgs {
  std::vector<int64_t> batches;       // empty: 1
  std::vector<std::string> targets;   // more than one: --compare
  std::vector<std::string> what_if;   // one parameter each
  std::string precision, convention = "native";
  bool sweep = false, check = false;
  int iters = 30, threads = 0;
};

// `systolic simulate MODEL ... --json` for a model opened with the batch simulated first
// (`model`): the per-layer report for one target and batch, a row per target x batch
// (sweep, several batches, compare; no measured host row), baseline and variants (what-if),
// or the host check.
std::string simulate(const PyModel& model, const SimulateArgs& a) {
  std::vector<int64_t> batches = a.batches;
  if (batches.empty()) batches.push_back(1);
  if (a.sweep) batches = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  sim::SimOptions so;
  so.precision = a.precision;
  if (a.convention == "scalesim") so.convention = sim::Convention::scalesim;
  else if (a.convention != "native") raise(Kind::invalid_argument, "convention '" + a.convention + "' (use native or scalesim)");
  const std::shared_ptr<const plan::Program> prog = api::program(model.model());
  const std::vector<std::string> names = a.targets.empty() ? std::vector<std::string>{"tpu-v4"} : a.targets;
  nlohmann::json out;
  pyb::gil_scoped_release nogil;
  if (a.check) {
    if (names.size() != 1 || names[0] != "host" || !a.what_if.empty() || batches.size() != 1)
      raise(Kind::invalid_argument, "check needs target \"host\" and one batch");
    sim::CheckOptions co;
    co.threads = a.threads;
    co.iters = a.iters;
    auto c = sim::check_host(prog, co);
    if (!c.ok()) raise(Kind::fail, c.status().message());
    c->model = model.model().path();
    out = sim::check_json(*c);
    out["plan_precision"] = prog->precision;
    return out.dump();
  }
  std::vector<target::Target> targets;
  for (const auto& name : names) {
    auto t = target::load_target(name, name == "host" ? sim::measured_fp32_peak_gflops(host_cpu().cores) : 0);
    if (!t.ok()) raise(Kind::invalid_argument, t.status().message());
    targets.push_back(*t);
  }
  auto run = [&](const target::Target& t, int64_t batch) {
    so.batch = batch;
    auto r = sim::simulate_program(*prog, t, so);
    if (!r.ok()) raise(Kind::fail, r.status().message());
    return std::move(*r);
  };
  if (!a.what_if.empty()) {
    std::vector<std::pair<std::string, target::Target>> variants;
    for (const auto& w : a.what_if) {
      variants.push_back({w, targets[0]});
      check(target::apply_what_if(&variants.back().second, w), Kind::invalid_argument);
    }
    const sim::SimReport base = run(targets[0], batches.front());
    out["baseline"] = sim::report_json(base, false);
    out["variants"] = nlohmann::json::array();
    for (const auto& [w, t] : variants) {
      const sim::SimReport r = run(t, batches.front());
      auto j = sim::report_json(r, false);
      j["variant"] = w;
      j["speedup"] = base.latency_us / r.latency_us;
      out["variants"].push_back(j);
    }
  } else if (a.sweep || targets.size() > 1 || batches.size() > 1) {
    out["runs"] = nlohmann::json::array();
    for (const auto& t : targets)
      for (int64_t b : batches) out["runs"].push_back(sim::report_json(run(t, b), false));
  } else {
    out = sim::report_json(run(targets[0], batches.front()), true);
  }
  out["plan_precision"] = prog->precision;
  return out.dump();
}

}  // namespace

void register_tools(pyb::module_& m) {
  m.def("model_precision", [](const std::string& path) { return api::model_precision(path, ""); },
        "the precision a model runs in without a request: int8 for a quantized model, a plan's own, else fp32");
  m.def(
      "simulate",
      [](const PyModel& model, const std::vector<int64_t>& batches, const std::vector<std::string>& targets,
         const std::vector<std::string>& what_if, const std::string& precision, const std::string& convention,
         bool sweep, bool check, int iters, int threads) {
        SimulateArgs a;
        a.batches = batches;
        a.targets = targets;
        a.what_if = what_if;
        a.precision = precision;
        a.convention = convention;
        a.sweep = sweep;
        a.check = check;
        a.iters = iters;
        a.threads = threads;
        return simulate(model, a);
      },
      pyb::arg("model"), pyb::arg("batches"), pyb::arg("targets"), pyb::arg("what_if"), pyb::arg("precision"),
      pyb::arg("convention"), pyb::arg("sweep"), pyb::arg("check"), pyb::arg("iters"), pyb::arg("threads"),
      "simulate --json's object (as JSON text) for a model opened at the first batch");
}

}  // namespace systolic::py
