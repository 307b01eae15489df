// Saved `systolic tune` recommendations: one JSON file per (model content, precision, host)
// under <cache dir>/tune/, read back as a model's default configuration (api/precision.h's
// model_precision gives the precision to key it by before compiling).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"

namespace systolic::api {

struct TunedConfig {
  int64_t batch = 1;
  int threads = 0;    // per instance
  int instances = 1;  // concurrent sessions of one plan
  double throughput_per_s = 0, p99_ms = 0;
  int64_t peak_bytes = 0;
  std::string path;   // the file it was loaded from or saved to
};

// The saved recommendation for this model file and precision on this host, if any. An
// unreadable or corrupt entry is an error (callers may ignore it and run untuned).
Expected<std::optional<TunedConfig>> load_tuned(const std::string& model_path, const std::string& precision = "fp32");
// Saves `cfg` (atomically) as the recommendation for the model file, precision and host; sets
// nothing in `cfg` (the path is tuned_path()).
Status save_tuned(const std::string& model_path, const std::string& precision, const TunedConfig& cfg);

// Where the recommendation for the model file and precision on this host is kept: keyed by the
// file's content hash, the precision, the CPU model string and the core count.
Expected<std::string> tuned_path(const std::string& model_path, const std::string& precision);

}  // namespace systolic::api
