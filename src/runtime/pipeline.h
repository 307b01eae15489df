// The asynchronous inference pipeline: items (images) are loaded by host threads into pooled
// slots, assembled into batches, run by one or more sessions, and handed to a result callback,
// each stage connected to the next by a bounded queue, so host work overlaps compute and
// memory stays fixed. Every buffer comes from a pool sized once; the steady state allocates
// nothing. What a stage does to an item is the caller's (decode + resize for images).
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/session.h"

namespace systolic::runtime {

struct PipelineOptions {
  int loaders = 1;      // host threads running `load`
  int queue_batches = 2;  // batches buffered between assembly and inference, and after it
};

// Fills the model's input bytes for one item (one row of the batch: inputs()[0].bytes() /
// batch bytes) at dst. Runs on loader thread `loader` (0..loaders-1), so per-thread scratch
// needs no locking. An error skips the item: it is reported, not run.
using LoadFn = std::function<Status(int loader, std::size_t item, uint8_t* dst)>;
// One finished item, on the single result thread, in completion order: its status (the load
// error, or OK) and its rows of every output (null when it failed).
using ResultFn = std::function<void(std::size_t item, const Status& status, const std::vector<const void*>& outputs,
                                    double latency_ms)>;

// One timed span of a stage, for traces. Times are ns since the pipeline started.
struct PipelineEvent {
  int32_t stage = 0;   // index into PipelineReport::stages
  int32_t thread = 0;  // thread within the stage
  int64_t item = 0;    // item (load) or batch number (others)
  int64_t start_ns = 0, dur_ns = 0;
};

struct StageReport {
  std::string name;
  int threads = 1;
  double busy_s = 0;  // summed over the stage's threads
  int64_t work = 0;   // items or batches handled
  double busy_pct(double wall_s) const { return wall_s > 0 ? 100.0 * busy_s / (wall_s * threads) : 0.0; }
};

struct PipelineReport {
  int64_t items = 0, failed = 0, batches = 0;
  double wall_s = 0;
  std::vector<double> latency_ms;  // per successful item: load start to result
  std::vector<StageReport> stages;  // load, assemble, infer, results
  std::vector<PipelineEvent> events;  // when tracing
  std::chrono::steady_clock::time_point start;
  // The stage with the highest busy share: the one that limits throughput.
  const StageReport* bottleneck() const;
};

// Runs `count` items through the sessions (all compiled from one plan; a batch goes to
// whichever is free). Returns when every item has been reported; an error only when a
// session fails (the pipeline then stops). `trace` records one PipelineEvent per stage span.
Expected<PipelineReport> run_pipeline(const std::vector<Session*>& sessions, std::size_t count, const LoadFn& load,
                                      const ResultFn& on_result, const PipelineOptions& opts = {},
                                      bool trace = false);

}  // namespace systolic::runtime
