// `systolic bench MODEL [--batch N] [--threads T] [--instances N] [--iters N] [--precision P]
// [--json] [--profile F.json]`: latency percentiles, throughput, peak RSS and achieved GFLOP/s
// (GOP/s for int8) against the measured peak of the plan's precision. Without --batch,
// --threads and --instances it runs the configuration `systolic tune` saved for the model and
// precision on this host, if there is one.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "api/benchmark.h"
#include "api/tune_store.h"
#include "runtime/session.h"
#include "sim/peak.h"
#include "tools/commands.h"
#include "tools/preprocess_flags.h"
#include "tools/shape_flags.h"
#include "tools/trace_json.h"
#include "tools/tune_measure.h"

namespace systolic::tools {

void register_bench(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "benchmark a model: latency, throughput, GFLOP/s (GOP/s for int8)");
  auto model = std::make_shared<std::string>();
  auto batch = std::make_shared<int64_t>(0);  // 0: a plan's own batch, 1 for an .onnx
  auto threads = std::make_shared<int>(0);
  auto iters = std::make_shared<int>(20);
  auto warmup = std::make_shared<int>(3);
  auto json = std::make_shared<bool>(false);
  auto per_layer = std::make_shared<bool>(false);
  auto trace = std::make_shared<std::string>();
  auto no_cache = std::make_shared<bool>(false);
  auto instances = std::make_shared<int>(1);
  auto no_tuned = std::make_shared<bool>(false);
  cmd->add_option("model", *model, "model .onnx or compiled .plan")->required();
  auto* batch_opt = cmd->add_option("--batch", *batch, "batch size (default: a .plan's own, else 1)")->check(CLI::PositiveNumber);
  auto* threads_opt = cmd->add_option("--threads", *threads, "threads per instance (default: the cores shared out)");
  auto* instances_opt = cmd->add_option("--instances", *instances,
                                        "concurrent sessions of the plan; throughput is their sum (default 1)")
                            ->check(CLI::PositiveNumber);
  cmd->add_flag("--no-tuned", *no_tuned, "ignore the configuration saved by systolic tune");
  cmd->add_option("--iters", *iters, "timed runs per instance (default 20)")->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", *warmup, "untimed runs first (default 3)");
  cmd->add_flag("--json", *json, "print one JSON object");
  cmd->add_flag("--per-layer", *per_layer, "time every step and print a per-layer table");
  cmd->add_option("--profile", *trace, "write a Chrome trace (JSON) of every step of every timed run");
  cmd->add_flag("--no-cache", *no_cache, "do not use the compile cache");
  auto micro = std::make_shared<int64_t>(0);
  add_micro_batch_flag(cmd, micro);
  auto pre = std::make_shared<PreprocessFlags>();
  add_preprocess_flags(cmd, pre);
  auto prec = std::make_shared<PrecisionFlags>();
  add_precision_flags(cmd, prec);
  auto shapes = std::make_shared<std::vector<std::string>>();
  add_shape_flag(cmd, shapes);
  cmd->callback([=] {
    auto bound = parse_shapes(*shapes);
    if (!bound.ok()) return fail(bound.status());
    ModelOptions mo;
    mo.batch = *batch;
    mo.micro_batch = *micro;
    mo.cache = !*no_cache;
    auto preprocess = resolve_preprocess(*pre);
    if (!preprocess.ok()) return fail(preprocess.status());
    mo.preprocess = *preprocess;
    mo.precision = *prec;
    mo.input_shapes = *bound;
    int n = *instances, t = *threads;
    const bool defaults = !batch_opt->count() && !threads_opt->count() && !instances_opt->count();
    if (defaults && !*no_tuned && std::filesystem::is_regular_file(*model)) {
      auto tuned = api::load_tuned(*model, api::model_precision(*model, prec->precision));
      if (!tuned.ok()) {
        std::fprintf(stderr, "systolic: note: ignoring the tuned configuration: %s\n", tuned.status().message().c_str());
      } else if (*tuned) {
        const api::TunedConfig& c = **tuned;
        mo.batch = c.batch;
        n = c.instances;
        t = c.threads;
        std::fprintf(stderr, "systolic: using tuned configuration batch %lld, %s (from %s)\n",
                     static_cast<long long>(c.batch), split_name({c.instances, c.threads}).c_str(), c.path.c_str());
      }
    }
    auto prog = load_model(*model, mo);
    if (!prog.ok()) return fail(prog.status());
    api::BenchOptions bo;
    bo.instances = n;
    bo.threads = t;
    bo.iters = *iters;
    bo.warmup = *warmup;
    bo.per_layer = *per_layer;
    if (!trace->empty()) {
      bo.trace_runs = static_cast<std::size_t>(*iters);
      bo.after_timed = [trace](runtime::Session& s) { return write_chrome_trace(s, *trace); };
    }
    auto r = api::bench(*prog, bo);
    if (!r.ok()) return fail(r.status());
    if (*json) {
      std::printf("%s\n", api::bench_json(*r, *model, *per_layer).dump().c_str());
      return;
    }
    runtime::Session& s = *r->inst.sessions[0];
    const int64_t b = r->batch;
    const double p50 = r->p50_ms, p90 = r->p90_ms, p99 = r->p99_ms, throughput = r->throughput_per_s;
    const double gflops = r->gflops, peak = r->peak.g_per_s;
    const sim::MeasuredPeak& pk = r->peak;
    const std::string& precision = r->precision;
    const char* unit = sim::ops_unit(precision);
    const int64_t rss = r->peak_rss_bytes;
    const std::vector<runtime::Session::StepProfile>& layers = r->layers;
    if (n == 1)
      std::printf("model       %s (batch %lld, %s, %s, %d threads)\n", model->c_str(), static_cast<long long>(b),
                  precision.c_str(), s.program().isa.c_str(), s.threads());
    else
      std::printf("model       %s (batch %lld, %s, %s, %s)\n", model->c_str(), static_cast<long long>(b),
                  precision.c_str(), s.program().isa.c_str(), split_name({n, s.threads()}).c_str());
    std::printf("latency     p50 %.2f ms   p90 %.2f ms   p99 %.2f ms   (%lld runs)\n", p50, p90, p99,
                static_cast<long long>(r->runs));
    std::printf("throughput  %.1f inferences/s\n", throughput);
    std::printf("compute     %.2f %s per run, %.1f %s/s = %.0f%% of the measured %s peak (%.0f %s/s%s%s)\n",
                s.flops() / 1e9, unit, gflops, unit, peak > 0 ? 100 * gflops / peak : 0.0, precision.c_str(), peak, unit,
                pk.fallback ? ": " : "", pk.fallback ? pk.name().c_str() : "");
    std::printf("memory      peak RSS %.1f MiB\n", rss / 1048576.0);
    if (*per_layer) {
      // Each layer against the peak of the precision its kernel computes in (an int8 plan keeps
      // some layers in float); the first instance ran alone on its threads.
      double total = 0;
      bool mixed = false;
      for (const auto& l : layers) total += l.runs ? l.total_ms / l.runs : 0;
      for (const auto& l : layers) mixed |= l.flops > 0 && sim::kernel_precision(l.kernel) != precision;
      const std::string rate = std::string(unit) + "/s";
      std::printf("\n%-28s %-18s %-28s %9s %6s %9s %6s\n", "layer", "op", "kernel", "ms", "share", rate.c_str(), "%peak");
      for (const auto& l : layers) {
        const double ms = l.runs ? l.total_ms / l.runs : 0;
        const double gf = ms > 0 ? l.flops / ms / 1e6 : 0;
        const double lp = sim::measured_peak(sim::kernel_precision(l.kernel), s.threads()).g_per_s;
        std::printf("%-28s %-18s %-28s %9.3f %5.1f%% %9.1f %5.0f%%\n", l.name.substr(0, 28).c_str(), l.op.c_str(),
                    l.kernel.c_str(), ms, total > 0 ? 100 * ms / total : 0, gf, lp > 0 ? 100 * gf / lp : 0);
      }
      if (mixed)
        std::printf("(%%peak: each layer against the measured peak of its kernel's precision; float layers in GFLOP/s)\n");
    }
  });
}

}  // namespace systolic::tools
