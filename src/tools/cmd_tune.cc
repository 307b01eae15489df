// `systolic tune MODEL [--latency-budget MS] [--memory-budget BYTES] [--precision fp32] ...`:
// sweeps batch sizes and thread/instance splits, prints the table and the recommended
// configuration, charts it as SVG and saves the recommendation for bench (and classify).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <new>
#include <sstream>

#include "base/cpu.h"
#include "tools/commands.h"
#include "tools/tune_store.h"
#include "tools/tune_svg.h"
#include "tools/tune_sweep.h"

namespace systolic::tools {
namespace {

constexpr double kMiB = 1048576.0;

bool is_plan_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[8] = {};
  f.read(magic, 8);
  return f.gcount() == 8 && std::string(magic, 8) == "SYSTPLAN";
}

Status check_precision(const std::string& p) {
  if (p == "fp32") return Status::Ok();
  if (p == "bf16" || p == "int8" || p == "fp16")
    return Err("precision %s is not available: this build has fp32 kernels only (use --precision fp32)", p.c_str());
  return Err("unknown precision '%s' (expected fp32; bf16, fp16 and int8 are not available yet)", p.c_str());
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
  std::string model, precision = "fp32", memory_budget, batches, svg;
  double latency_ms = 0, seconds = 2;
  int64_t max_batch = 32;
  int threads = 0;
  bool json = false, no_svg = false, no_save = false, no_cache = false;
};

void tune(const TuneArgs& a, bool batches_given) {
  if (Status st = check_precision(a.precision); !st.ok()) return fail(st);
  Budgets budgets;
  budgets.latency_ms = a.latency_ms;
  if (!a.memory_budget.empty()) {
    auto m = parse_bytes(a.memory_budget);
    if (!m.ok()) return fail(Err("--memory-budget: %s", m.status().message().c_str()));
    budgets.memory_bytes = *m;
  }
  if (!std::filesystem::exists(a.model)) return fail(Err("cannot open %s: no such file", a.model.c_str()));
  SweepOptions so;
  so.budgets = budgets;
  so.max_batch = a.max_batch;
  const int total_threads = a.threads > 0 ? a.threads : std::max(1, host_cpu().cores);
  so.splits = thread_splits(total_threads);
  const bool plan_file = is_plan_file(a.model);
  std::shared_ptr<const plan::Program> program;
  if (plan_file) {
    // A compiled plan has its batch fixed: only the split varies.
    if (batches_given) return fail(Err("%s is a compiled plan with a fixed batch; tune the .onnx to sweep batch sizes", a.model.c_str()));
    auto p = load_model(a.model, {});
    if (!p.ok()) return fail(p.status());
    program = *p;
    so.batches = {program->batch};
  } else if (!a.batches.empty()) {
    auto b = parse_batches(a.batches);
    if (!b.ok()) return fail(b.status());
    so.batches = *b;
  }
  MeasureOptions mo;
  mo.seconds = a.seconds;
  mo.memory_budget = budgets.memory_bytes;
  const bool peak_measured = can_measure_peak_rss();
  auto measure = [&](int64_t batch, const Split& split) -> Expected<TuneRow> {
    if (!program || program->batch != batch) {
      program.reset();  // free the previous batch's plan before compiling the next
      ModelOptions opts;
      opts.batch = batch;
      opts.cache = !a.no_cache;
      try {
        auto p = load_model(a.model, opts);
        if (!p.ok()) return p.status();
        program = *p;
      } catch (const std::bad_alloc&) {
        TuneRow r;
        r.note = "does not fit: out of memory compiling for batch " + std::to_string(batch);
        return r;
      }
    }
    auto r = measure_config(program, split, mo);
    if (r.ok() && !a.json)
      std::fprintf(stderr, "systolic: tune: batch %lld, %s: %s\n", static_cast<long long>(batch), split_name(split).c_str(),
                   r->fits ? (std::to_string(static_cast<int64_t>(r->throughput_per_s + 0.5)) + " img/s").c_str()
                           : r->note.c_str());
    return r;
  };
  auto rows = run_sweep(so, measure);
  program.reset();
  if (!rows.ok()) return fail(rows.status());
  auto best = recommend(*rows, budgets);
  const int best_i = best.ok() ? static_cast<int>(*best) : -1;
  std::string svg_path, saved_path;
  if (!a.no_svg) {
    svg_path = a.svg.empty() ? default_svg_path(a.model) : a.svg;
    std::ofstream f(svg_path);
    f << tune_svg(*rows, "systolic tune: " + std::filesystem::path(a.model).filename().string() + " (" + a.precision + ", " +
                             plan::isa_name(host_cpu()) + ", " + std::to_string(total_threads) + " threads)",
                  best_i);
    if (!f.flush()) return fail(Err("cannot write %s", svg_path.c_str()));
  }
  TunedConfig cfg;
  if (best.ok()) {
    const TuneRow& r = (*rows)[*best];
    cfg.batch = r.batch;
    cfg.threads = r.split.threads;
    cfg.instances = r.split.instances;
    cfg.throughput_per_s = r.throughput_per_s;
    cfg.p99_ms = r.p99_ms;
    cfg.peak_bytes = r.memory_bytes();
    if (!a.no_save) {
      if (Status st = save_tuned(a.model, a.precision, cfg); !st.ok())
        std::fprintf(stderr, "systolic: note: the recommendation was not saved: %s\n", st.message().c_str());
      else if (auto p = tuned_path(a.model, a.precision); p.ok())
        saved_path = *p;
    }
  }
  const char* peak_source = peak_measured ? "peak RSS of the process while the configuration ran (VmHWM, reset before each)"
                                          : "RSS of the process after the configuration ran (the peak cannot be reset here)";
  if (a.json) {
    nlohmann::json j = {{"model", a.model},
                        {"precision", a.precision},
                        {"isa", plan::isa_name(host_cpu())},
                        {"host", {{"cpu", host_cpu().name}, {"cores", host_cpu().cores}}},
                        {"threads", total_threads},
                        {"seconds_per_point", a.seconds},
                        {"budgets",
                         {{"latency_ms", budgets.latency_ms > 0 ? nlohmann::json(budgets.latency_ms) : nlohmann::json()},
                          {"memory_bytes", budgets.memory_bytes > 0 ? nlohmann::json(budgets.memory_bytes) : nlohmann::json()}}},
                        {"peak_bytes_is", peak_source},
                        {"table", nlohmann::json::array()},
                        {"recommended", nullptr},
                        {"saved", saved_path.empty() ? nlohmann::json() : nlohmann::json(saved_path)},
                        {"svg", svg_path.empty() ? nlohmann::json() : nlohmann::json(svg_path)}};
    for (const TuneRow& r : *rows) j["table"].push_back(row_json(r, budgets));
    if (best.ok())
      j["recommended"] = {{"batch", cfg.batch},
                          {"instances", cfg.instances},
                          {"threads", cfg.threads},
                          {"throughput_per_s", cfg.throughput_per_s},
                          {"p99_ms", cfg.p99_ms},
                          {"peak_bytes", cfg.peak_bytes}};
    else
      j["error"] = best.status().message();
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("model        %s (%s, %s, %d threads, %.1f s per point)\n", a.model.c_str(), a.precision.c_str(),
                plan::isa_name(host_cpu()).c_str(), total_threads, a.seconds);
    char lat[32] = "none", mem[32] = "none";
    if (budgets.latency_ms > 0) std::snprintf(lat, sizeof lat, "%.2f ms", budgets.latency_ms);
    if (budgets.memory_bytes > 0) std::snprintf(mem, sizeof mem, "%.0f MiB", budgets.memory_bytes / kMiB);
    std::printf("budgets      latency p99 %s, memory %s\n\n", lat, mem);
    print_table(*rows, budgets, best_i);
    std::printf("\npeak MiB: %s\nest MiB: from the plan: weights once + per instance arena, conv workspace and I/O\n\n",
                peak_source);
    if (best.ok())
      std::printf("recommended  batch %lld, %s: %.1f img/s, p99 %.2f ms, %.0f MiB\n", static_cast<long long>(cfg.batch),
                  split_name({cfg.instances, cfg.threads}).c_str(), cfg.throughput_per_s, cfg.p99_ms, cfg.peak_bytes / kMiB);
    if (!saved_path.empty()) std::printf("saved        %s (bench uses it by default)\n", saved_path.c_str());
    if (!svg_path.empty()) std::printf("chart        %s\n", svg_path.c_str());
  }
  if (!best.ok()) fail(best.status());
}

}  // namespace

void register_tune(CLI::App& app) {
  auto* cmd = app.add_subcommand("tune", "find the batch size and thread/instance split with the best throughput");
  auto a = std::make_shared<TuneArgs>();
  cmd->add_option("model", a->model, "model .onnx (compiled per batch size) or compiled .plan (fixed batch)")->required();
  cmd->add_option("--latency-budget", a->latency_ms, "p99 latency per run, in ms")->check(CLI::PositiveNumber);
  cmd->add_option("--memory-budget", a->memory_budget, "resident memory of the process: bytes, or with K/M/G (e.g. 2G)");
  cmd->add_option("--precision", a->precision, "fp32 (the only precision with kernels today)");
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
  cmd->callback([=] { tune(*a, batches->count() > 0 || max_batch->count() > 0); });
}

}  // namespace systolic::tools
