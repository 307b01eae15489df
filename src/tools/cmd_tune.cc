// `systolic tune MODEL [--latency-budget MS] [--memory-budget BYTES] [--precision P] ...`:
// sweeps batch sizes and thread/instance splits, prints the table and the recommended
// configuration, charts it as SVG and saves the recommendation for bench (and classify) under
// the plan's precision.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "api/tune.h"
#include "base/cpu.h"
#include "tools/commands.h"
#include "tools/tune_svg.h"
#include "tools/tune_sweep.h"

namespace systolic::tools {
namespace {

constexpr double kMiB = 1048576.0;

std::string default_svg_path(const std::string& model) {
  return std::filesystem::path(model).stem().string() + ".tune.svg";
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

void print_text(const TuneArgs& a, const api::TuneReport& t) {
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
  api::TuneRequest r;
  r.model = a.model;
  r.precision = a.precision.precision;
  r.budgets.latency_ms = a.latency_ms;
  if (!a.memory_budget.empty()) {
    auto m = parse_bytes(a.memory_budget);
    if (!m.ok()) return fail(Err("--memory-budget: %s", m.status().message().c_str()));
    r.budgets.memory_bytes = *m;
  }
  r.batches = a.batches;
  r.batches_given = batches_given;
  r.max_batch = a.max_batch;
  r.threads = a.threads;
  r.seconds = a.seconds;
  r.load = [&a](int64_t batch) {
    ModelOptions opts;
    opts.precision = a.precision;
    if (batch > 0) {  // a plan is opened as it is (batch 0) and with the cache's default
      opts.batch = batch;
      opts.cache = !a.no_cache;
    }
    return load_model(a.model, opts);
  };
  if (!a.json)
    r.measured = [](int64_t batch, const Split& split, const TuneRow& row) {
      char what[64];
      std::snprintf(what, sizeof what, "%.1f img/s", row.throughput_per_s);
      std::fprintf(stderr, "systolic: tune: batch %lld, %s: %s\n", static_cast<long long>(batch),
                   split_name(split).c_str(), row.fits ? what : row.note.c_str());
    };
  auto rep = api::tune(r);
  if (!rep.ok()) return fail(rep.status());
  api::TuneReport& t = *rep;
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
  if (!a.no_save)
    if (Status st = api::save_recommendation(&t); !st.ok())
      std::fprintf(stderr, "systolic: note: the recommendation was not saved: %s\n", st.message().c_str());
  if (a.json) std::printf("%s\n", api::tune_json(t).dump(2).c_str());
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
