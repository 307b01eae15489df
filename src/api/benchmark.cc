// Bench: warmup, timed runs of every instance at once, an optional per-layer pass.
#include "api/benchmark.h"

#include <sys/resource.h>

#include <algorithm>

#include "api/percentile.h"
#include "base/cpu.h"

namespace systolic::api {

Expected<BenchResult> bench(std::shared_ptr<const plan::Program> program, const BenchOptions& o) {
  const int n = o.instances;
  const int t = o.threads > 0 ? o.threads : std::max(1, host_cpu().cores / std::max(1, n));
  BenchResult r;
  auto inst = open_instances(std::move(program), n, t);
  if (!inst.ok()) return inst.status();
  r.inst = std::move(*inst);
  runtime::Session& s = *r.inst.sessions[0];
  // Caller-owned buffers (open_instances): the timed loop (run_into) allocates nothing;
  // with several instances each does `iters` runs, all at once.
  if (o.warmup > 0)
    if (auto w = run_instances(r.inst, o.warmup, 0); !w.ok()) return w.status();
  if (o.trace_runs) s.set_trace(o.trace_runs);  // preallocated; a few clock reads per step
  auto timed = run_instances(r.inst, o.iters, 0);
  if (!timed.ok()) return timed.status();
  if (o.after_timed)
    if (Status st = o.after_timed(s); !st.ok()) return st;
  if (o.per_layer) {
    // A separate timed pass of the first instance alone, so per-step clock reads do not
    // disturb the figures above.
    s.set_trace(0);
    s.set_profiling(true);
    for (int i = 0; i < o.iters; ++i)
      if (Status st = run_once(s, r.inst.io[0]); !st.ok()) return st;
    r.layers = s.profile();
  }
  const std::vector<double>& ms = timed->latency_ms;
  r.p50_ms = percentile(ms, 0.5);
  r.p90_ms = percentile(ms, 0.9);
  r.p99_ms = percentile(ms, 0.99);
  r.runs = timed->runs;
  r.batch = s.program().batch;
  r.instances = n;
  r.threads = s.threads();
  r.iters = o.iters;
  r.precision = s.program().precision;
  r.isa = s.program().isa;
  r.throughput_per_s = r.batch * static_cast<double>(timed->runs) / timed->wall_s;
  // One instance: per-run speed; several: what they achieve together on all their threads.
  // GFLOP/s, or GOP/s for int8 (Session::flops() counts 2 per MAC either way).
  r.gflops = n == 1 ? s.flops() / (r.p50_ms * 1e-3) / 1e9 : s.flops() * timed->runs / timed->wall_s / 1e9;
  r.gflop_per_run = s.flops() / 1e9;
  r.peak = sim::measured_peak(r.precision, s.threads() * n);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  r.peak_rss_bytes = static_cast<int64_t>(ru.ru_maxrss) * 1024;
  return r;
}

nlohmann::json bench_json(const BenchResult& r, const std::string& model, bool per_layer) {
  const double peak = r.peak.g_per_s;
  nlohmann::json j = {{"model", model},
                      {"batch", r.batch},
                      {"precision", r.precision},
                      {"threads", r.threads},
                      {"instances", r.instances},
                      {"isa", r.isa},
                      {"iters", r.iters},
                      {"p50_ms", r.p50_ms},
                      {"p90_ms", r.p90_ms},
                      {"p99_ms", r.p99_ms},
                      {"throughput_per_s", r.throughput_per_s},
                      {"gflops", r.gflops},
                      {"peak_gflops", peak},
                      {"peak_name", r.peak.name()},
                      {"utilization", peak > 0 ? r.gflops / peak : 0.0},
                      {"gflop_per_run", r.gflop_per_run},
                      {"peak_rss_bytes", r.peak_rss_bytes}};
  if (per_layer) {
    j["layers"] = nlohmann::json::array();
    for (const auto& l : r.layers) {
      const double ms = l.runs ? l.total_ms / l.runs : 0;
      j["layers"].push_back({{"name", l.name}, {"op", l.op}, {"kernel", l.kernel},
                             {"precision", sim::kernel_precision(l.kernel)}, {"ms", ms},
                             {"gflops", ms > 0 ? l.flops / ms / 1e6 : 0.0}});
    }
  }
  return j;
}

}  // namespace systolic::api
