// Session: runs a compiled program. Owns the arena, the thread pool and the prepared steps
// (kernel + resolved pointers), so a run is a flat loop of calls.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/threadpool.h"
#include "plan/program.h"
#include "runtime/dynamic_tail.h"
#include "runtime/host_tensor.h"

namespace systolic::runtime {

struct SessionOptions {
  int threads = 0;  // 0: one per core
  // The most the dynamic tail's tensors may total in one run (0: half the machine's memory).
  std::size_t tail_max_bytes = 0;
};

struct TensorInfo {
  std::string name;
  ir::DType dtype;
  ir::Shape shape;
  // 0 for an output whose shape is known only at run time (a dim is -1).
  std::size_t bytes() const {
    const int64_t n = ir::checked_num_elements(shape);
    return n < 0 ? 0 : static_cast<std::size_t>(n) * ir::dtype_size(dtype);
  }
  bool dynamic() const { return ir::checked_num_elements(shape) < 0; }
};

// One timed span of a traced run: a step (step >= 0, an index into profile()) or the whole
// run (step == -1). Times are nanoseconds since the session was created.
struct TraceEvent {
  int32_t step = -1;
  int32_t run = 0;
  int64_t start_ns = 0;
  int64_t dur_ns = 0;
};

class Session {
 public:
  static Expected<std::unique_ptr<Session>> create(std::shared_ptr<const plan::Program> program,
                                                   const SessionOptions& opts = {});
  ~Session();

  const std::vector<TensorInfo>& inputs() const { return inputs_; }
  const std::vector<TensorInfo>& outputs() const { return outputs_; }
  // Shapes as the caller provides them: logical (NCHW) for tensors, NHWC for a uint8 image
  // input (a plan compiled with preprocessing).
  // Inputs by name (order free); outputs in the graph's output order. Convenient; allocates
  // (name lookups, output tensors). A plan with a dynamic tail runs it after the static steps
  // (runtime/dynamic_tail.h); its outputs come back in the shapes of the run.
  Status run(const std::vector<std::pair<std::string, HostTensor>>& inputs, std::vector<HostTensor>* outputs);
  // The steady-state path: inputs[k] points at inputs()[k].bytes() dense bytes in the shape
  // inputs() gives, outputs[k] at outputs()[k].bytes() writable bytes; the caller owns
  // both. It performs no heap allocation, not even on the first call, provided
  // allocating_steps() is empty (kernel steps and the interpreter's copy-only ops never
  // allocate; see there), and only the error path builds a message. Profiling and tracing
  // stay allocation-free too (the trace buffer is reserved by set_trace).
  Status run_into(const std::vector<const void*>& inputs, const std::vector<void*>& outputs);
  // run_into with each input given as rows along its first (batch) dimension: rows[k] holds n
  // pointers to inputs()[k].bytes() / n bytes each, a null one a row of zeros (padding); one row
  // is the whole input, however the plan cuts its batch into micro-batch runs. The
  // rows go straight into the plan's input slots, copied in parallel on the pool, so a server
  // merging requests keeps no batch buffer of its own. Allocates only for a dynamic tail.
  Status run_rows(const std::vector<std::vector<const void*>>& rows, const std::vector<void*>& outputs);
  // Inputs as run_into takes them; outputs allocated in the shapes of this run (a plan with a
  // dynamic tail gives data-dependent shapes here).
  Status run_dynamic(const std::vector<const void*>& inputs, std::vector<HostTensor>* outputs);
  // Names ("Op name") of the steps that fall back to an interpreter op which may allocate
  // while it runs (broadcasting helpers, Concat, Transpose, Softmax, ...); they break
  // run_into's zero-allocation guarantee. Empty for the zoo models.
  std::vector<std::string> allocating_steps() const;
  // Floating-point operations of one run (convolutions and matmuls: 2 per MAC).
  double flops() const { return flops_; }
  int threads() const { return threads_; }
  // The pool the kernels run on (null with one thread), for measurements that must share it.
  pthreadpool_t pool() const { return pool_.get(); }
  // Per-step wall time, accumulated over runs while profiling is on; a plan's dynamic tail is
  // one more row at the end.
  void set_profiling(bool on) { profiling_ = on; }
  struct StepProfile {
    std::string name, op, kernel;
    double flops = 0, total_ms = 0;
    int64_t bytes = 0;  // inputs + weights + outputs of the step, as the plan sizes them
    int64_t runs = 0;
  };
  std::vector<StepProfile> profile() const;
  // Records every step of up to `runs` following runs as TraceEvents (and turns profiling
  // on); the buffer is reserved here, so recording never allocates. 0 stops tracing.
  void set_trace(std::size_t runs);
  const std::vector<TraceEvent>& trace() const { return trace_; }
  // Called at the start of every run with each input, then after every step with each tensor
  // the step wrote (as stored: NHWC
  // where the plan keeps it so, uint8 with its quantization where the plan is int8). For
  // calibration and per-layer comparisons; null turns it off.
  using Observer = std::function<void(const ir::Tensor&, const void* data)>;
  void set_observer(Observer o) { observer_ = std::move(o); }
  // What trace times count from (the session's creation).
  std::chrono::steady_clock::time_point epoch() const { return epoch_; }
  const plan::Program& program() const { return *program_; }

  struct Step;

 private:
  Session() = default;
  Status execute();  // runs every step on the arena (inputs already copied in)
  // Copies slice `run` (of runs_ along the batch) of each input into the arena; `who` names
  // the caller in errors.
  Status load_inputs(const std::vector<const void*>& inputs, const char* who, int64_t run = 0);
  // The same for inputs given as rows (run_rows; checked there).
  void load_rows(const std::vector<std::vector<const void*>>& rows, int64_t run);
  // The static plan's runs (run_into, run_rows): every output buffer checked, then per
  // micro-batch run the inputs loaded by load(run), the steps, the outputs stored; `who` names
  // the caller in errors.
  template <class Load>
  Status run_static(const std::vector<void*>& outputs, const char* who, Load&& load);
  // Copies the static outputs of the graph's run `run` into their slices of `outputs`.
  void store_outputs(const std::vector<void*>& outputs, int64_t run) const;
  // The dynamic tail on this run's values: model inputs from `inputs` (in inputs() order),
  // the rest from the static outputs.
  Status run_tail(const std::vector<const void*>& inputs, std::vector<HostTensor>* outputs);
  Status timed_tail(const std::vector<const void*>& inputs, std::vector<HostTensor>* outputs);  // profiled
  std::shared_ptr<const plan::Program> program_;
  ThreadPool pool_;
  int threads_ = 1;
  std::size_t tail_max_bytes_ = 0;
  // Where each tail input comes from, resolved by name once: (true, k) the k-th model input,
  // (false, k) the k-th static output.
  std::vector<std::pair<bool, std::size_t>> tail_sources_;
  double tail_ms_ = 0;  // the dynamic tail's time while profiling, as profile()'s last row
  int64_t tail_runs_ = 0;
  std::unique_ptr<TailMemory> tail_memory_ = std::make_unique<TailMemory>();  // the tail's buffers between runs
  uint8_t* arena_ = nullptr;      // aligned_alloc'ed, freed in the destructor
  float* workspace_ = nullptr;
  std::vector<std::unique_ptr<Step>> steps_;
  std::vector<TensorInfo> inputs_, outputs_;
  int64_t runs_ = 1;  // runs of the graph per run of the plan (plan::runs_per_batch)
  double flops_ = 0;
  bool profiling_ = false;
  bool tracing_ = false;
  int32_t runs_traced_ = 0;
  std::vector<TraceEvent> trace_;
  Observer observer_;
  std::chrono::steady_clock::time_point epoch_ = std::chrono::steady_clock::now();
};

}  // namespace systolic::runtime
