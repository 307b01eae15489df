// The inference server's core, shared by the HTTP and gRPC front ends: the models (from a
// Triton-layout repository or NAME=PATH pairs), their per-model dynamic batchers with bounded
// queues, readiness and draining, and the metrics. Front ends decode a request into an
// InferRequest, call infer(), and encode what comes back; they hold no model logic.
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "serve/infer.h"
#include "serve/model_config.h"
#include "serve/model_runner.h"
#include "systolic/status.h"

namespace systolic::serve {

struct ServerOptions {
  std::string repository;                                   // Triton layout: DIR/NAME/VERSION/model.{onnx,plan}
  std::vector<std::pair<std::string, std::string>> models;  // NAME, PATH
  ModelSettings defaults;  // for --model models, and keys a config.json leaves out
  bool use_tuned = true;
  // Nice steps the inference threads run below the process (0: none). The network threads, at
  // the process's own priority, then run first when they wake: under full load they still
  // read, refuse and answer within a millisecond or two instead of waiting out compute slices.
  int compute_nice = 10;
};

struct ModelMetadata {
  std::string name;
  std::vector<std::string> versions;
  std::string platform;  // "onnx_onnxv1" or "systolic_plan"
  std::vector<TensorMeta> inputs, outputs;
};

class Server {
 public:
  static Expected<std::unique_ptr<Server>> create(const ServerOptions& opts);
  ~Server();

  // live: answering; ready: every model loaded and not draining.
  bool live() const;
  bool ready() const;
  std::string name() const { return "systolic"; }
  std::string version() const;
  std::vector<std::string> extensions() const;  // only what is implemented

  // version "" means the latest ready version.
  std::variant<ModelMetadata, Error> model_metadata(const std::string& model, const std::string& version) const;
  std::variant<bool, Error> model_ready(const std::string& model, const std::string& version) const;
  std::variant<std::string, Error> model_config_json(const std::string& model, const std::string& version) const;

  // Admission (validation, queue bound) happens before infer() returns; `done` is called
  // exactly once, from a worker thread, or inline when the request is refused. `cancelled`,
  // when given and set, drops the request if it has not been computed yet (client gone).
  using Done = serve::Done;
  void infer(InferRequest req, Done done, std::shared_ptr<std::atomic<bool>> cancelled = nullptr);

  // Repository extension: (re)load from the repository, or unload. A failed load keeps the
  // version that was serving; requests already admitted finish on the version they were
  // admitted to.
  std::optional<Error> load(const std::string& model);
  std::optional<Error> unload(const std::string& model);
  // [{name, version, state, reason}] for POST /v2/repository/index.
  std::string repository_index_json() const;

  // Prometheus text exposition of every nv_inference_* metric.
  std::string metrics_text() const;

  // "model NAME: note" for whatever loading the models had to say.
  std::vector<std::string> load_notes() const;

  // SIGTERM: readiness goes false, new requests get UNAVAILABLE, admitted ones finish.
  void begin_drain();
  // Waits until nothing is queued or running, or `timeout` passes; true when idle.
  bool wait_idle(std::chrono::milliseconds timeout);

  // Requests of the loaded models so far: answered, admitted but failed (timed out, client
  // gone, session error), refused at admission (queue full, draining, invalid).
  struct Totals {
    uint64_t succeeded = 0, failed = 0, refused = 0;
  };
  Totals totals() const;

  struct Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace systolic::serve
