// Session: runs a compiled program. Owns the arena, the thread pool and the prepared steps
// (kernel + resolved pointers), so a run is a flat loop of calls.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/threadpool.h"
#include "plan/program.h"
#include "runtime/host_tensor.h"

namespace systolic::runtime {

struct SessionOptions {
  int threads = 0;  // 0: one per core
};

struct TensorInfo {
  std::string name;
  ir::DType dtype;
  ir::Shape shape;
};

struct StepTiming {
  std::string name;
  std::string op;
  std::string kernel;
  double flops = 0;
};

class Session {
 public:
  static Expected<std::unique_ptr<Session>> create(std::shared_ptr<const plan::Program> program,
                                                   const SessionOptions& opts = {});
  ~Session();

  const std::vector<TensorInfo>& inputs() const { return inputs_; }
  const std::vector<TensorInfo>& outputs() const { return outputs_; }
  // Inputs by name (order free); outputs in the graph's output order.
  Status run(const std::vector<std::pair<std::string, HostTensor>>& inputs, std::vector<HostTensor>* outputs);
  // Floating-point operations of one run (convolutions and matmuls: 2 per MAC).
  double flops() const { return flops_; }
  int threads() const { return threads_; }
  // Per-step wall time, accumulated over runs while profiling is on.
  void set_profiling(bool on) { profiling_ = on; }
  struct StepProfile {
    std::string name, op, kernel;
    double flops = 0, total_ms = 0;
    int64_t runs = 0;
  };
  std::vector<StepProfile> profile() const;
  const plan::Program& program() const { return *program_; }

  struct Step;

 private:
  Session() = default;
  std::shared_ptr<const plan::Program> program_;
  ThreadPool pool_;
  int threads_ = 1;
  uint8_t* arena_ = nullptr;      // aligned_alloc'ed, freed in the destructor
  float* workspace_ = nullptr;
  std::vector<std::unique_ptr<Step>> steps_;
  std::vector<TensorInfo> inputs_, outputs_;
  double flops_ = 0;
  bool profiling_ = false;
};

}  // namespace systolic::runtime
