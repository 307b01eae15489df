// `systolic tune MODEL [--latency-budget MS] [--memory-budget BYTES] [--precision P] ...`:
// sweeps batch sizes and thread/instance splits, prints the table and the recommended
// configuration, charts it as SVG and saves the recommendation for bench (and classify) under
// the plan's precision.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <new>
#include <onnx/onnx_pb.h>
#include <set>
#include <sstream>

#include "api/tune_store.h"
#include "base/cpu.h"
#include "tools/commands.h"
#include "tools/tune_svg.h"
#include "tools/tune_sweep.h"

namespace systolic::tools {
namespace {

constexpr double kMiB = 1048576.0;

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

std::string default_svg_path(const std::string& model) {
  return std::filesystem::path(model).stem().string() + ".tune.svg";
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

void print_table(const std::vector<TuneRow>& rows, const Budgets& b, int best) {
  std::printf("%6s  %-22s %9s %9s %9s %5s %8s %9s  %s\n", "batch", "instances x threads", "img/s", "p50 ms", "p99 ms",
              "runs", "est MiB", "peak MiB", "note");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const TuneRow& r = rows[i];
    std::string why, note = r.note;
    if (r.fits && !meets_budgets(r, b, &why)) note += (note.empty() ? "" : "; ") + why;
    if (static_cast<int>(i) == best) note = "<- recommended" + (note.empty() ? "" : "; " + note);
    const std::string split = std::to_string(r.split.instances) + " x " + std::to_string(r.split.threads);
    if (r.fits)
      std::printf("%6lld  %-22s %9.1f %9.2f %9.2f %5lld %8.1f %9.1f  %s\n", static_cast<long long>(r.batch), split.c_str(),
                  r.throughput_per_s, r.p50_ms, r.p99_ms, static_cast<long long>(r.runs), r.estimate_bytes / kMiB,
                  r.peak_bytes / kMiB, note.c_str());
    else
      std::printf("%6lld  %-22s %9s %9s %9s %5s %8.1f %9s  %s\n", static_cast<long long>(r.batch), split.c_str(), "-", "-",
                  "-", "-", r.estimate_bytes / kMiB, "-", note.c_str());
  }
}

struct TuneArgs {
  std::string model, memory_budget, batches, svg;
  PrecisionFlags precision;
  double latency_ms = 0, seconds = 2;
  int64_t max_batch = 32;
  int threads = 0;
  bool json = false, no_svg = false, no_save = false, no_cache = false;
};

// What the sweep found, for printing.
struct TuneReport {
  std::string precision;  // the plan's
  int threads = 0;
  Budgets budgets;
  std::vector<TuneRow> rows;
  int best = -1;          // index into rows, or -1 with `error` set
  std::string error;
  api::TunedConfig cfg;   // rows[best] as saved
  std::string svg, saved;  // paths, "" when not written
  const char* peak_source = "";
};

nlohmann::json null_or(double v) { return v > 0 ? nlohmann::json(v) : nlohmann::json(); }
nlohmann::json null_or(const std::string& s) { return s.empty() ? nlohmann::json() : nlohmann::json(s); }

void print_json(const TuneArgs& a, const TuneReport& t) {
  nlohmann::json j = {{"model", a.model},
                      {"precision", t.precision},
                      {"isa", plan::isa_name(host_cpu())},
                      {"host", {{"cpu", host_cpu().name}, {"cores", host_cpu().cores}}},
                      {"threads", t.threads},
                      {"seconds_per_point", a.seconds},
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
  std::printf("%s\n", j.dump(2).c_str());
}

void print_text(const TuneArgs& a, const TuneReport& t) {
  std::printf("model        %s (%s, %s, %d threads, %.1f s per point)\n", a.model.c_str(), t.precision.c_str(),
              plan::isa_name(host_cpu()).c_str(), t.threads, a.seconds);
  char lat[32] = "none", mem[32] = "none";
  if (t.budgets.latency_ms > 0) std::snprintf(lat, sizeof lat, "%g ms", t.budgets.latency_ms);
  if (t.budgets.memory_bytes > 0) std::snprintf(mem, sizeof mem, "%s", size_str(t.budgets.memory_bytes).c_str());
  std::printf("budgets      latency p99 %s, memory %s\n\n", lat, mem);
  print_table(t.rows, t.budgets, t.best);
  std::printf("\npeak MiB: %s\nest MiB: from the plan: weights once + per instance arena, conv workspace and I/O\n\n",
              t.peak_source);
  if (t.best >= 0)
    std::printf("recommended  batch %lld, %s: %.1f img/s, p99 %.2f ms, %.0f MiB\n", static_cast<long long>(t.cfg.batch),
                split_name({t.cfg.instances, t.cfg.threads}).c_str(), t.cfg.throughput_per_s, t.cfg.p99_ms,
                t.cfg.peak_bytes / kMiB);
  if (!t.saved.empty()) std::printf("saved        %s (bench uses it by default)\n", t.saved.c_str());
  if (!t.svg.empty()) std::printf("chart        %s\n", t.svg.c_str());
}

void tune(const TuneArgs& a, bool batches_given) {
  TuneReport t;
  t.budgets.latency_ms = a.latency_ms;
  if (!a.memory_budget.empty()) {
    auto m = parse_bytes(a.memory_budget);
    if (!m.ok()) return fail(Err("--memory-budget: %s", m.status().message().c_str()));
    t.budgets.memory_bytes = *m;
  }
  if (!std::filesystem::exists(a.model)) return fail(Err("cannot open %s: no such file", a.model.c_str()));
  t.precision = api::model_precision(a.model, a.precision.precision);
  SweepOptions so;
  so.budgets = t.budgets;
  so.max_batch = a.max_batch;
  t.threads = a.threads > 0 ? a.threads : std::max(1, host_cpu().cores);
  so.splits = thread_splits(t.threads);
  std::shared_ptr<const plan::Program> program;
  if (is_plan_file(a.model)) {
    // A compiled plan has its batch fixed: only the split varies.
    if (batches_given)
      return fail(Err("%s is a compiled plan with a fixed batch; tune the .onnx to sweep batch sizes", a.model.c_str()));
    ModelOptions opts;
    opts.precision = a.precision;
    auto p = load_model(a.model, opts);
    if (!p.ok()) return fail(p.status());
    program = *p;
    t.precision = program->precision;
    so.batches = {program->batch};
  } else if (const int64_t fixed = onnx_fixed_batch(a.model); fixed > 0) {
    // The batch dimension is not symbolic: every compile gives this batch.
    if (batches_given && (a.batches.empty() || a.batches != std::to_string(fixed)))
      return fail(Err("%s has a fixed batch of %lld (its input's first dimension is not symbolic); only threads and "
                      "instances can be tuned", a.model.c_str(), static_cast<long long>(fixed)));
    so.batches = {fixed};
  } else if (!a.batches.empty()) {
    auto b = parse_batches(a.batches);
    if (!b.ok()) return fail(b.status());
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
      ModelOptions opts;
      opts.batch = batch;
      opts.cache = !a.no_cache;
      opts.precision = a.precision;
      try {
        auto p = load_model(a.model, opts);
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
    if (r.ok() && !a.json) {
      char what[64];
      std::snprintf(what, sizeof what, "%.1f img/s", r->throughput_per_s);
      std::fprintf(stderr, "systolic: tune: batch %lld, %s: %s\n", static_cast<long long>(batch),
                   split_name(split).c_str(), r->fits ? what : r->note.c_str());
    }
    return r;
  };
  auto rows = run_sweep(so, measure);
  program.reset();
  if (!rows.ok()) return fail(rows.status());
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
  Status svg_error;  // reported after the table, which is worth having anyway
  if (!a.no_svg) {
    t.svg = a.svg.empty() ? default_svg_path(a.model) : a.svg;
    std::ofstream f(t.svg);
    f << tune_svg(t.rows,
                  "systolic tune: " + std::filesystem::path(a.model).filename().string() + " (" + t.precision + ", " +
                      plan::isa_name(host_cpu()) + ", " + std::to_string(t.threads) + " threads)",
                  t.best);
    if (!f.flush()) {
      svg_error = Err("cannot write the chart %s", t.svg.c_str());
      t.svg.clear();
    }
  }
  if (t.best >= 0 && !a.no_save) {
    if (Status st = api::save_tuned(a.model, t.precision, t.cfg); !st.ok())
      std::fprintf(stderr, "systolic: note: the recommendation was not saved: %s\n", st.message().c_str());
    else if (auto p = api::tuned_path(a.model, t.precision); p.ok())
      t.saved = *p;
  }
  if (a.json) print_json(a, t);
  else print_text(a, t);
  if (!svg_error.ok()) return fail(svg_error);
  if (t.best < 0) fail(Err("%s", t.error.c_str()));
}

}  // namespace

void register_tune(CLI::App& app) {
  auto* cmd = app.add_subcommand("tune", "find the batch size and thread/instance split with the best throughput");
  auto a = std::make_shared<TuneArgs>();
  cmd->add_option("model", a->model, "model .onnx (compiled per batch size) or compiled .plan (fixed batch)")->required();
  cmd->add_option("--latency-budget", a->latency_ms, "p99 latency per run, in ms")->check(CLI::PositiveNumber);
  cmd->add_option("--memory-budget", a->memory_budget, "resident memory of the process: bytes, or with K/M/G (e.g. 2G)");
  auto* batches = cmd->add_option("--batches", a->batches, "batch sizes to measure, e.g. 1,4,16 (default: 1,2,4,... "
                                                          "up to --max-batch, stopping when throughput stops improving)");
  auto* max_batch = cmd->add_option("--max-batch", a->max_batch, "largest batch of the default sweep (default 32)")
                        ->check(CLI::PositiveNumber);
  cmd->add_option("--threads", a->threads, "threads to share out among instances (default: one per core)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--seconds-per-point", a->seconds, "measuring time per configuration (default 2)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", a->json, "print the table and the recommendation as one JSON object");
  cmd->add_option("--svg", a->svg, "chart file (default: MODEL_STEM.tune.svg in the current directory)");
  cmd->add_flag("--no-svg", a->no_svg, "do not write the chart");
  cmd->add_flag("--no-save", a->no_save, "do not save the recommendation for bench and classify");
  cmd->add_flag("--no-cache", a->no_cache, "do not use the compile cache");
  add_precision_flags(cmd, std::shared_ptr<PrecisionFlags>(a, &a->precision));
  cmd->callback([=] { tune(*a, batches->count() > 0 || max_batch->count() > 0); });
}

}  // namespace systolic::tools
