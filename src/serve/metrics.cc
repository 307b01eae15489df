#include "serve/metrics.h"

#include <cstdio>
#include <functional>

namespace systolic::serve {

void Histogram::observe(double us) {
  std::size_t k = 0;
  while (k < kBounds.size() && us > kBounds[k]) ++k;
  buckets[k].fetch_add(1, std::memory_order_relaxed);
  count.fetch_add(1, std::memory_order_relaxed);
  sum_us.fetch_add(static_cast<uint64_t>(us < 0 ? 0 : us), std::memory_order_relaxed);
}

namespace {

void line(std::string* out, const std::string& name, const std::string& labels, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, " %.17g\n", v);
  *out += name + "{" + labels + "}" + buf;
}

std::string labels_of(const LabelledMetrics& m) {
  return "model=\"" + m.model + "\",version=\"" + m.version + "\"";
}

using Get = std::function<double(const ModelMetrics&)>;

void scalar(std::string* out, const std::vector<LabelledMetrics>& ms, const char* name, const char* type,
            const char* help, const Get& get) {
  *out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  for (const auto& m : ms) line(out, name, labels_of(m), get(*m.metrics));
}

void histogram(std::string* out, const std::vector<LabelledMetrics>& ms, const char* name, const char* help,
               const Histogram ModelMetrics::*h) {
  *out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " histogram\n";
  for (const auto& m : ms) {
    const Histogram& hist = (*m.metrics).*h;
    const std::string l = labels_of(m);
    uint64_t cum = 0;
    for (std::size_t k = 0; k <= Histogram::kBounds.size(); ++k) {
      cum += hist.buckets[k].load(std::memory_order_relaxed);
      char le[32];
      if (k < Histogram::kBounds.size())
        std::snprintf(le, sizeof le, "%g", Histogram::kBounds[k]);
      else
        std::snprintf(le, sizeof le, "+Inf");
      line(out, std::string(name) + "_bucket", l + ",le=\"" + le + "\"", static_cast<double>(cum));
    }
    line(out, std::string(name) + "_sum", l, static_cast<double>(hist.sum_us.load()));
    line(out, std::string(name) + "_count", l, static_cast<double>(hist.count.load()));
  }
}

double v(const std::atomic<uint64_t>& a) { return static_cast<double>(a.load(std::memory_order_relaxed)); }

}  // namespace

std::string render_metrics(const std::vector<LabelledMetrics>& ms) {
  std::string out;
  scalar(&out, ms, "nv_inference_request_success", "counter",
         "Number of successful inference requests, all batch sizes",
         [](const ModelMetrics& m) { return v(m.request_success); });
  out += "# HELP nv_inference_request_failure Number of failed inference requests, all batch sizes\n"
         "# TYPE nv_inference_request_failure counter\n";
  for (const auto& m : ms) {
    const std::string l = labels_of(m);
    line(&out, "nv_inference_request_failure", l + ",reason=\"REJECTED\"", v(m.metrics->failure_rejected));
    line(&out, "nv_inference_request_failure", l + ",reason=\"INVALID\"", v(m.metrics->failure_invalid));
    line(&out, "nv_inference_request_failure", l + ",reason=\"CANCELED\"", v(m.metrics->failure_timeout));
    line(&out, "nv_inference_request_failure", l + ",reason=\"BACKEND\"", v(m.metrics->failure_internal));
  }
  scalar(&out, ms, "nv_inference_count", "counter", "Number of inferences performed (a batch of n counts n)",
         [](const ModelMetrics& m) { return v(m.inference_count); });
  scalar(&out, ms, "nv_inference_exec_count", "counter", "Number of model executions performed",
         [](const ModelMetrics& m) { return v(m.exec_count); });
  scalar(&out, ms, "systolic_inference_wide_exec_count", "counter",
         "Executions of a lone request on the threads of every instance (the other instances idle)",
         [](const ModelMetrics& m) { return v(m.wide_exec_count); });
  scalar(&out, ms, "nv_inference_pending_request_count", "gauge",
         "Number of admitted requests not yet answered (queued or computing)",
         [](const ModelMetrics& m) { return static_cast<double>(m.pending.load()); });
  scalar(&out, ms, "nv_inference_request_duration_us", "counter",
         "Cumulative inference request duration in microseconds",
         [](const ModelMetrics& m) { return v(m.request_us); });
  scalar(&out, ms, "nv_inference_queue_duration_us", "counter", "Cumulative inference queuing duration in microseconds",
         [](const ModelMetrics& m) { return v(m.queue_us); });
  scalar(&out, ms, "nv_inference_compute_infer_duration_us", "counter",
         "Cumulative compute inference duration in microseconds",
         [](const ModelMetrics& m) { return v(m.compute_us); });
  histogram(&out, ms, "nv_inference_request_duration_histogram_us", "Request duration, end to end, in microseconds",
            &ModelMetrics::request_hist);
  histogram(&out, ms, "nv_inference_queue_duration_histogram_us", "Queue duration in microseconds",
            &ModelMetrics::queue_hist);
  histogram(&out, ms, "nv_inference_compute_infer_duration_histogram_us", "Compute duration in microseconds",
            &ModelMetrics::compute_hist);
  return out;
}

}  // namespace systolic::serve
