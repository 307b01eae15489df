// Saved `systolic tune` recommendations: one JSON file per (model content, precision, host)
// under <cache dir>/tune/, read back by bench and classify as their default configuration.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"

namespace systolic::tools {

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

// The precision a model runs in, known before compiling it: `flag` when given (--precision), a
// compiled plan's own, int8 for a quantized (QDQ) ONNX model, else fp32 (compile's automatic
// choice). An unreadable model gives fp32: loading it says what is wrong.
std::string model_precision(const std::string& model_path, const std::string& flag);

// Where the recommendation for the model file and precision on this host is kept: keyed by the
// file's content hash, the precision, the CPU model string and the core count.
Expected<std::string> tuned_path(const std::string& model_path, const std::string& precision);

}  // namespace systolic::tools
