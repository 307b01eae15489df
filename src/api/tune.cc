// The tune sweep over a model: which batches can vary, each point measured, the pick saved.
#include "api/tune.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <new>
#include <set>
#include <sstream>

#include "api/internal.h"
#include "api/precision.h"
#include "base/cpu.h"

namespace systolic::api {
namespace {

// The leading dimension of the model's first input when it is a fixed number (0 when it is
// symbolic, or the file does not parse: loading it will say what is wrong).
int64_t onnx_fixed_batch(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  const std::string bytes = ss.str();
  onnx::ModelProto m;
  if (bytes.size() > INT32_MAX || !m.ParseFromString(bytes)) return 0;
  std::set<std::string> weights;
  for (const auto& t : m.graph().initializer()) weights.insert(t.name());
  for (const auto& in : m.graph().input()) {
    if (weights.count(in.name())) continue;  // old exporters list initializers as inputs
    const auto& shape = in.type().tensor_type().shape();
    if (shape.dim_size() == 0 || !shape.dim(0).has_dim_value()) return 0;
    return shape.dim(0).dim_value() > 0 ? shape.dim(0).dim_value() : 0;
  }
  return 0;
}

Expected<std::vector<int64_t>> parse_batches(const std::string& list) {
  std::vector<int64_t> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() || v < 1)
      return Err("invalid --batches '%s': expected positive integers separated by commas (e.g. 1,4,16)", list.c_str());
    out.push_back(v);
  }
  if (out.empty()) return Err("--batches is empty");
  return out;
}

nlohmann::json row_json(const TuneRow& r, const Budgets& b) {
  std::string why;
  const bool ok = meets_budgets(r, b, &why);
  return {{"batch", r.batch},
          {"instances", r.split.instances},
          {"threads", r.split.threads},
          {"fits", r.fits},
          {"meets_budgets", ok},
          {"throughput_per_s", r.throughput_per_s},
          {"p50_ms", r.p50_ms},
          {"p99_ms", r.p99_ms},
          {"runs", r.runs},
          {"estimate_bytes", r.estimate_bytes},
          {"peak_bytes", r.peak_bytes},
          {"note", r.note.empty() ? why : why.empty() || why == r.note ? r.note : r.note + "; " + why}};
}

nlohmann::json null_or(double v) { return v > 0 ? nlohmann::json(v) : nlohmann::json(); }
nlohmann::json null_or(const std::string& s) { return s.empty() ? nlohmann::json() : nlohmann::json(s); }

}  // namespace

Expected<TuneReport> tune(const TuneRequest& a) {
  TuneReport t;
  t.model = a.model;
  t.seconds = a.seconds;
  t.budgets = a.budgets;
  if (!std::filesystem::exists(a.model)) return Err("cannot open %s: no such file", a.model.c_str());
  t.precision = model_precision(a.model, a.precision);
  SweepOptions so;
  so.budgets = t.budgets;
  so.max_batch = a.max_batch;
  t.threads = a.threads > 0 ? a.threads : std::max(1, host_cpu().cores);
  so.splits = thread_splits(t.threads);
  std::shared_ptr<const plan::Program> program;
  if (is_plan_file(a.model)) {
    // A compiled plan has its batch fixed: only the split varies.
    if (a.batches_given)
      return Err("%s is a compiled plan with a fixed batch; tune the .onnx to sweep batch sizes", a.model.c_str());
    auto p = a.load(0);
    if (!p.ok()) return p.status();
    program = *p;
    t.precision = program->precision;
    so.batches = {program->batch};
  } else if (const int64_t fixed = onnx_fixed_batch(a.model); fixed > 0) {
    // The batch dimension is not symbolic: every compile gives this batch.
    if (a.batches_given && (a.batches.empty() || a.batches != std::to_string(fixed)))
      return Err("%s has a fixed batch of %lld (its input's first dimension is not symbolic); only threads and "
                 "instances can be tuned", a.model.c_str(), static_cast<long long>(fixed));
    so.batches = {fixed};
  } else if (!a.batches.empty()) {
    auto b = parse_batches(a.batches);
    if (!b.ok()) return b.status();
    so.batches = *b;
  }
  MeasureOptions mo;
  mo.seconds = a.seconds;
  mo.memory_budget = t.budgets.memory_bytes;
  t.peak_source = can_measure_peak_rss()
                      ? "peak RSS of the process while the configuration ran (VmHWM, reset before each)"
                      : "RSS of the process after the configuration ran (the peak cannot be reset here)";
  auto measure = [&](int64_t batch, const Split& split) -> Expected<TuneRow> {
    if (!program || program->batch != batch) {
      program.reset();  // free the previous batch's plan before compiling the next
      try {
        auto p = a.load(batch);
        if (!p.ok()) return p.status();
        program = *p;
        t.precision = program->precision;
      } catch (const std::bad_alloc&) {
        TuneRow r;
        r.note = "does not fit: out of memory compiling for batch " + std::to_string(batch);
        return r;
      }
    }
    auto r = measure_config(program, split, mo);
    if (r.ok() && a.measured) a.measured(batch, split, *r);
    return r;
  };
  auto rows = run_sweep(so, measure);
  program.reset();
  if (!rows.ok()) return rows.status();
  t.rows = std::move(*rows);
  auto best = recommend(t.rows, t.budgets);
  if (best.ok()) {
    t.best = static_cast<int>(*best);
    const TuneRow& r = t.rows[*best];
    t.cfg.batch = r.batch;
    t.cfg.threads = r.split.threads;
    t.cfg.instances = r.split.instances;
    t.cfg.throughput_per_s = r.throughput_per_s;
    t.cfg.p99_ms = r.p99_ms;
    t.cfg.peak_bytes = r.memory_bytes();
  } else {
    t.error = best.status().message();
  }
  return t;
}

Status save_recommendation(TuneReport* t) {
  if (t->best < 0) return Status::Ok();
  if (Status st = save_tuned(t->model, t->precision, t->cfg); !st.ok()) return st;
  if (auto p = tuned_path(t->model, t->precision); p.ok()) t->saved = *p;
  return Status::Ok();
}

nlohmann::json tune_json(const TuneReport& t) {
  nlohmann::json j = {{"model", t.model},
                      {"precision", t.precision},
                      {"isa", plan::isa_name(host_cpu())},
                      {"host", {{"cpu", host_cpu().name}, {"cores", host_cpu().cores}}},
                      {"threads", t.threads},
                      {"seconds_per_point", t.seconds},
                      {"budgets",
                       {{"latency_ms", null_or(t.budgets.latency_ms)},
                        {"memory_bytes", t.budgets.memory_bytes > 0 ? nlohmann::json(t.budgets.memory_bytes) : nlohmann::json()}}},
                      {"peak_bytes_is", t.peak_source},
                      {"table", nlohmann::json::array()},
                      {"recommended", nullptr},
                      {"saved", null_or(t.saved)},
                      {"svg", null_or(t.svg)}};
  for (const TuneRow& r : t.rows) j["table"].push_back(row_json(r, t.budgets));
  if (t.best >= 0)
    j["recommended"] = {{"batch", t.cfg.batch},
                        {"instances", t.cfg.instances},
                        {"threads", t.cfg.threads},
                        {"throughput_per_s", t.cfg.throughput_per_s},
                        {"p99_ms", t.cfg.p99_ms},
                        {"peak_bytes", t.cfg.peak_bytes}};
  else
    j["error"] = t.error;
  return j;
}

}  // namespace systolic::api
