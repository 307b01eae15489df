// Several sessions of one plan run concurrently (each on its own std::thread and thread pool):
// the serving shape `bench --instances` and `tune` measure. The sessions share the plan, so
// its weights are in memory once; each has its own arena, workspace and I/O buffers.
#pragma once
#include <memory>
#include <vector>

#include "api/random_inputs.h"
#include "base/status.h"
#include "plan/program.h"
#include "runtime/session.h"

namespace systolic::api {

struct Instances {
  std::vector<std::unique_ptr<runtime::Session>> sessions;
  std::vector<IoBuffers> io;  // io[k] belongs to sessions[k]
};

// `count` sessions of `program` on `threads` threads each, with random inputs. A failed
// allocation (an error from Session::create, or std::bad_alloc) is an error, not a crash.
Expected<Instances> open_instances(std::shared_ptr<const plan::Program> program, int count, int threads);

struct InstanceRuns {
  std::vector<double> latency_ms;  // every run of every instance
  int64_t runs = 0;                // sum over instances
  double wall_s = 0;               // from the common start to the last instance's last run
};

// One run on the instance's buffers: Session::run_into, no allocation; a plan with outputs
// shaped by the run (a dynamic tail) gives them through run_dynamic instead.
Status run_once(runtime::Session& s, const IoBuffers& io);

// Starts every instance at once; each does at least `min_runs` runs (run_once) and keeps
// going until `min_seconds` have passed since the start.
Expected<InstanceRuns> run_instances(Instances& inst, int64_t min_runs, double min_seconds);

}  // namespace systolic::api
