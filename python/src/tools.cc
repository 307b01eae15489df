// The CLI's computing commands as functions returning what their --json prints (as JSON text;
// the Python side parses it): each calls the library that computes it, with no printing.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nlohmann/json.hpp>

#include "api/benchmark.h"
#include "api/internal.h"
#include "api/precision.h"
#include "api/quantize.h"
#include "api/tune.h"
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
  // The model was compiled in the precision asked for; its plan is costed layer by layer in
  // its own precision, as the CLI does (a forced precision is only for SCALE-Sim topologies).
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
  m.def(
      "tune",
      [](const std::string& path, const std::string& precision, double latency_ms, const std::string& memory_budget,
         const std::string& batches, int64_t max_batch, bool batches_given, int threads, double seconds, bool save,
         bool use_cache) {
        api::TuneRequest r;
        r.model = path;
        r.precision = precision;
        r.budgets.latency_ms = latency_ms;
        if (!memory_budget.empty()) {
          auto b = api::parse_bytes(memory_budget);
          if (!b.ok()) raise(Kind::invalid_argument, "memory_budget: " + b.status().message());
          r.budgets.memory_bytes = *b;
        }
        r.batches = batches;
        r.batches_given = batches_given;
        r.max_batch = max_batch;
        r.threads = threads;
        r.seconds = seconds;
        r.load = [&](int64_t batch) -> Expected<std::shared_ptr<const plan::Program>> {
          ModelOptions o;
          o.precision = precision;
          o.batch = batch;
          o.use_cache = batch == 0 || use_cache;
          o.use_tuned = false;
          auto m = api::open_model(path, o, {});
          if (!m.ok()) return m.status();
          return api::program(**m);
        };
        std::string out;
        {
          pyb::gil_scoped_release nogil;
          auto t = api::tune(r);
          if (!t.ok()) raise(open_error_kind(path, t.status()), t.status().message());
          if (save) (void)api::save_recommendation(&*t);  // not saved: "saved" stays null
          out = api::tune_json(*t).dump();
        }
        return out;
      },
      pyb::arg("path"), pyb::arg("precision"), pyb::arg("latency_ms"), pyb::arg("memory_budget"), pyb::arg("batches"),
      pyb::arg("max_batch"), pyb::arg("batches_given"), pyb::arg("threads"), pyb::arg("seconds"), pyb::arg("save"),
      pyb::arg("use_cache"), "tune --json's object (as JSON text; no chart)");
  m.def(
      "quantize_qdq",
      [](const std::string& path, const std::string& out, const std::vector<std::string>& calibration,
         const std::string& method, const std::vector<std::string>& keep_fp32, bool reduce_range,
         const std::string& preprocess, const std::map<std::string, std::vector<int64_t>>& shapes, int64_t batch) {
        api::QuantizeRequest r;
        r.qdq = true;
        r.batch = batch;
        r.input_shapes = shapes;
        r.precision.calibration = calibration;
        r.precision.method = method;
        r.precision.keep_fp32 = keep_fp32;
        if (preprocess == "imagenet") r.preprocess = ir::imagenet_preprocess();
        else if (!preprocess.empty())
          raise(Kind::invalid_argument, "preprocess '" + preprocess + "': unknown; accepted: \"imagenet\", or empty");
        nlohmann::json j;
        pyb::gil_scoped_release nogil;
        std::vector<std::string> notes;
        auto c = api::calibrate_model(path, r, &notes);
        if (!c.ok()) raise(open_error_kind(path, c.status()), c.status().message());
        quantize::QdqExportStats st;
        check(api::write_qdq(path, c->ranges, keep_fp32, reduce_range, out, &st, r.input_shapes), Kind::fail);
        j = {{"calibrated", c->ranges.size()}, {"activations", st.activations}, {"weights", st.weights},
             {"notes", notes}};
        return j.dump();
      },
      pyb::arg("path"), pyb::arg("output"), pyb::arg("calibration"), pyb::arg("method"), pyb::arg("keep_fp32"),
      pyb::arg("reduce_range"), pyb::arg("preprocess"),
      pyb::arg("shapes") = std::map<std::string, std::vector<int64_t>>{}, pyb::arg("batch") = 1,
      "quantize -o X.onnx: calibrates a float .onnx and writes its QDQ model; what was written (JSON text)");
  m.def(
      "bench",
      [](const PyModel& model, int threads, int instances, int iters, int warmup, bool per_layer,
         const std::string& name) {
        if (instances < 1) raise(Kind::invalid_argument, "instances " + std::to_string(instances) + ": must be at least 1");
        if (iters < 1) raise(Kind::invalid_argument, "iters " + std::to_string(iters) + ": must be at least 1");
        api::BenchOptions o;
        o.threads = threads;
        o.instances = instances;
        o.iters = iters;
        o.warmup = warmup;
        o.per_layer = per_layer;
        std::string out;
        {
          pyb::gil_scoped_release nogil;
          auto r = api::bench(api::program(model.model()), o);
          if (!r.ok()) raise(Kind::fail, r.status().message());
          out = api::bench_json(*r, name, per_layer).dump();
        }
        return out;
      },
      pyb::arg("model"), pyb::arg("threads"), pyb::arg("instances"), pyb::arg("iters"), pyb::arg("warmup"),
      pyb::arg("per_layer"), pyb::arg("name"), "bench --json's object (as JSON text) for an opened model");
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
