// One served model version: its compiled plans (one per batch size of a ladder, so a merged
// batch of any size runs without padding), `instances` workers each with a session of every
// size, the bounded request queue and the dynamic batcher that merges requests.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "serve/infer.h"
#include "serve/metrics.h"
#include "serve/model_config.h"
#include "systolic/systolic.h"

namespace systolic::serve {

struct TensorMeta {
  std::string name, datatype;
  std::vector<int64_t> shape;  // batch dimension first, -1 where the batcher merges requests
};

using Done = std::function<void(std::variant<InferResponse, Error>)>;
using Clock = std::chrono::steady_clock;

// An admitted request: validated, its inputs as rows of the model's inputs.
struct Pending {
  int64_t rows = 0;
  std::vector<std::string> inputs;           // per model input: rows x row bytes
  std::vector<int> outputs;                   // model output indices to return
  std::vector<int64_t> classification;        // per returned output: top-K, or 0
  std::vector<bool> binary;
  std::string id;
  Done done;
  std::shared_ptr<std::atomic<bool>> cancelled;
  Clock::time_point admitted, deadline = Clock::time_point::max();
};

class ModelRunner {
 public:
  // compute_nice > 0 runs the workers (and their sessions' pools) that many nice steps lower.
  static Expected<std::shared_ptr<ModelRunner>> load(const ModelSource& src, bool use_tuned, int compute_nice = 0);
  ~ModelRunner();

  const std::string& name() const { return name_; }
  const std::string& version() const { return version_; }
  const ModelSettings& settings() const { return settings_; }  // resolved
  const std::string& platform() const { return platform_; }
  const std::vector<TensorMeta>& inputs() const { return in_meta_; }
  const std::vector<TensorMeta>& outputs() const { return out_meta_; }
  std::string config_json() const;
  // What opening the model had to say (int8 calibrated on random data, a cache note, ...).
  const std::vector<std::string>& notes() const { return notes_; }
  ModelMetrics& metrics() { return metrics_; }

  // Validates and queues; an error means the request was not admitted (nothing queued, `done`
  // not called). `stopped` is set instead when this version no longer takes requests.
  std::optional<Error> submit(InferRequest& req, Done& done, std::shared_ptr<std::atomic<bool>>& cancelled,
                              bool* stopped);
  // Stops taking requests, finishes every admitted one, joins the workers.
  void stop();

 private:
  struct Worker;
  ModelRunner() = default;
  std::optional<Error> admit(InferRequest& req, Pending* p) const;
  Status start_worker(Worker* w, int compute_nice, bool make_wide);
  Status add_sessions(Worker* w, std::size_t count, int threads);
  void worker_loop(Worker* w);
  // Runs the batch on w's sessions, calls computed(wide) once the sessions are done, answers.
  void execute(Worker* w, std::vector<Pending>& batch, bool wide);
  void computed(bool wide);  // the worker no longer computes (busy_, wide_running_)
  void execute_run_shaped(Worker* w, Pending& p);
  // A computed request's metrics, then its answer: `outs` (and `run`, see respond()), or the
  // run's error.
  void finish(Pending& p, Clock::time_point start, double compute_us, const Status& st,
              std::vector<std::string>& outs, const std::vector<TensorMeta>* run = nullptr);
  // `run`: each output's shape and element type as the run gave them (run-shaped models), else
  // null: the metadata's.
  void respond(Pending& p, std::vector<std::string>& outs, const std::vector<TensorMeta>* run = nullptr);

  std::string name_, version_, platform_;
  ModelSettings settings_;
  std::vector<std::shared_ptr<Model>> ladder_;  // ascending batch sizes
  bool batched_ = true;   // false: the model's batch is fixed; requests carry exactly it
  bool pad_ = false;      // a .plan of batch B > 1: smaller batches are padded
  bool run_shaped_ = false;  // an output's shape comes from each run (implies !batched_)
  std::vector<TensorMeta> in_meta_, out_meta_;
  std::vector<std::size_t> in_row_, out_row_;  // bytes of one row
  std::vector<std::string> labels_;
  std::vector<std::string> notes_;
  std::vector<std::unique_ptr<Worker>> workers_;
  // With several instances, a session of all their threads at batch 1: a request that finds the
  // queue empty and every worker idle runs on it (wide), so a lone client gets the whole
  // model's threads while concurrent clients keep the instances apart. Workers that take a
  // batch during a wide run wait for its end (wide_done_): wide and narrow runs never overlap
  // (the wide pool's workers may still spin a moment after a run, as pthreadpool's do).
  std::unique_ptr<Worker> wide_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> queue_;
  bool stopping_ = false;
  int64_t last_batch_requests_ = 2;  // under mu_; starts as if requests were merging
  int busy_ = 0;                      // under mu_: workers between taking a batch and computed()
  bool wide_running_ = false;         // under mu_
  std::condition_variable wide_done_;
  ModelMetrics metrics_;
};

// One instance: a thread with a session of every ladder size and their I/O buffers.
struct ModelRunner::Worker {
  std::thread thread;
  std::vector<std::unique_ptr<Session>> sessions;             // per ladder size
  std::vector<std::vector<std::vector<const void*>>> rows;    // [ladder][input][row], set per run
  std::vector<std::vector<std::vector<uint8_t>>> out;         // [ladder][output]
  std::vector<std::vector<void*>> out_ptrs;
};

// KServe datatype of an element type ("" when it has none).
std::string kserve_datatype(DType t);

}  // namespace systolic::serve
