// Per model-version serving metrics in Triton's nv_inference_* names (the names dashboards,
// gateways and autoscalers already read), with real histograms, rendered as Prometheus text.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace systolic::serve {

// Cumulative histogram in microseconds, lock-free to observe.
struct Histogram {
  static constexpr std::array<double, 14> kBounds = {100,    250,    500,     1000,    2500,    5000,    10000,
                                                     25000,  50000,  100000,  250000,  500000,  1000000, 5000000};
  std::array<std::atomic<uint64_t>, kBounds.size() + 1> buckets{};  // last: +Inf
  std::atomic<uint64_t> count{0};
  std::atomic<uint64_t> sum_us{0};
  void observe(double us);
};

struct ModelMetrics {
  std::atomic<uint64_t> request_success{0};
  std::atomic<uint64_t> failure_rejected{0};   // refused at admission: queue full, draining
  std::atomic<uint64_t> failure_invalid{0};    // failed validation
  std::atomic<uint64_t> failure_timeout{0};    // deadline passed or client gone before compute
  std::atomic<uint64_t> failure_internal{0};   // a session error
  std::atomic<uint64_t> inference_count{0};    // rows computed (batch n counts n)
  std::atomic<uint64_t> exec_count{0};         // session runs
  std::atomic<uint64_t> wide_exec_count{0};    // of those, lone requests on every instance's threads
  std::atomic<int64_t> pending{0};             // admitted, not yet answered
  std::atomic<uint64_t> request_us{0}, queue_us{0}, compute_us{0};  // cumulative
  Histogram request_hist, queue_hist, compute_hist;
};

struct LabelledMetrics {
  std::string model, version;
  const ModelMetrics* metrics = nullptr;
};
// Every metric family once (# HELP, # TYPE), each with one sample set per model version,
// labelled model="NAME",version="V".
std::string render_metrics(const std::vector<LabelledMetrics>& models);

}  // namespace systolic::serve
