// `systolic bench`'s measurement: a plan run by one or more concurrent instances on random
// inputs, reduced to latency percentiles, throughput, achieved GFLOP/s (GOP/s for int8)
// against the measured peak of its precision, and peak RSS. The CLI and Python print it.
#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/multi_instance.h"
#include "base/status.h"
#include "plan/program.h"
#include "runtime/session.h"
#include "sim/peak.h"

namespace systolic::api {

struct BenchOptions {
  int instances = 1;
  int threads = 0;  // per instance; 0: the cores shared out among the instances
  int iters = 20;   // timed runs per instance
  int warmup = 3;   // untimed runs first
  bool per_layer = false;   // then a separate profiled pass of the first instance alone
  std::size_t trace_runs = 0;  // record a trace of the timed runs of the first instance
  // Called after the timed runs, before the per-layer pass (which ends the trace).
  std::function<Status(runtime::Session&)> after_timed;
};

struct BenchResult {
  Instances inst;  // the sessions that ran (the first one's profile and trace)
  int64_t batch = 0, runs = 0;
  int instances = 1, threads = 1, iters = 0;
  std::string precision, isa;
  double p50_ms = 0, p90_ms = 0, p99_ms = 0, throughput_per_s = 0;
  double gflops = 0, gflop_per_run = 0;
  sim::MeasuredPeak peak;
  int64_t peak_rss_bytes = 0;
  std::vector<runtime::Session::StepProfile> layers;  // per_layer only
};

Expected<BenchResult> bench(std::shared_ptr<const plan::Program> program, const BenchOptions& opts);

// The object `systolic bench --json` prints; `model` as the user named it.
nlohmann::json bench_json(const BenchResult& r, const std::string& model, bool per_layer);

}  // namespace systolic::api
