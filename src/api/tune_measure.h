// One `systolic tune` measurement: a plan at one batch size, split into concurrent instances,
// checked against the memory budget before anything is allocated.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "plan/program.h"

namespace systolic::api {

// How the threads are shared out: `instances` sessions, each on `threads` threads.
struct Split {
  int instances = 1;
  int threads = 1;
  bool operator==(const Split&) const = default;
};
// "1 instance x 2 threads", "2 instances x 1 thread".
std::string split_name(const Split& s);

// What a configuration will hold in memory, from the plan alone: the weights once (the
// sessions share the plan), and per instance the arena, the conv workspace and the I/O
// buffers. Thread stacks and the process's own code and heap are not counted.
struct Footprint {
  int64_t weights = 0;
  int64_t per_instance = 0;
  int64_t total(int instances) const { return weights + per_instance * instances; }
};
Footprint estimate_footprint(const plan::Program& p);

struct TuneRow {
  int64_t batch = 1;
  Split split;
  bool fits = false;  // the sessions were created and measured
  double throughput_per_s = 0;  // images per second, all instances together
  double p50_ms = 0, p99_ms = 0;  // per run of one instance
  int64_t runs = 0;
  int64_t estimate_bytes = 0;  // Footprint::total
  int64_t peak_bytes = 0;      // measured peak RSS of the process during the configuration (0: unknown)
  std::string note;            // why it does not fit, or what the sweep concluded here
  // The memory a budget is checked against: the measured peak when there is one.
  int64_t memory_bytes() const { return peak_bytes > 0 ? peak_bytes : estimate_bytes; }
};

struct MeasureOptions {
  double seconds = 2;          // per configuration, after one warm-up run per instance
  int64_t min_runs = 2;        // per instance, however long they take
  int64_t memory_budget = 0;   // bytes; 0: none (the machine's available memory still applies)
};

// Measures `program` split as `split`. A configuration whose estimate exceeds the budget or
// the available memory, or whose sessions fail to allocate, comes back with fits == false and
// the reason in `note`; only a failing run is an error.
Expected<TuneRow> measure_config(std::shared_ptr<const plan::Program> program, const Split& split,
                                 const MeasureOptions& opts);

// Whether peak RSS can be measured per configuration here (Linux: VmHWM, reset through
// /proc/self/clear_refs); when not, tables show the estimate instead.
bool can_measure_peak_rss();

// "1.5 KiB", "12.3 MiB", "2048 MiB": a size for a message.
std::string size_str(int64_t bytes);

// "512M", "2G", "1.5GiB", "300000" (bytes); binary units (K = 1024).
Expected<int64_t> parse_bytes(const std::string& s);

}  // namespace systolic::api
