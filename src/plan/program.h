// The compiled program: the graph after the whole pipeline (static shapes, layouts, kernel
// per step, pre-packed weights, arena offsets) plus what it was compiled for. It is the one
// contract between compiler, runtime and simulator, and it serializes (the compile cache).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/cpu.h"
#include "base/status.h"
#include "ir/graph.h"
#include "ir/preprocess.h"
#include "passes/pass.h"

namespace systolic::plan {

constexpr uint32_t kPlanVersion = 12;  // 2: word-wise checksum; 3: image preprocessing; 4: quantization; 5: bf16;
                                       // 6: dynamic tail; 7: micro-batch; 8: uint8 tables, fused into int8
                                       // convs too (a binary that reads 7 would skip q_table silently); 9: int8
                                       // Winograd on AVX2 (cached int8 plans recompile to take it); 10: bf16
                                       // activations stored as bf16 (a binary that reads 9 would take them
                                       // for floats); 11: max pools on bf16 storage (cached bf16 plans
                                       // recompile to take them); 12: the AMX kernels (int8 and bf16)
                                       // pack an image stem's weights for its space-to-depth form
// The oldest plan format this binary reads: 11's AMX bf16 stems were packed for the window gather.
constexpr uint32_t kOldestPlanVersion = 12;

struct CompileStats {
  int64_t nodes_before = 0;
  int64_t nodes_after = 0;
  int64_t arena_bytes = 0;
  int64_t naive_bytes = 0;   // sum of all intermediate tensors, without sharing
  int64_t weight_bytes = 0;
  double compile_ms = 0;
};

struct Program {
  ir::Graph graph;
  std::string isa;           // highest instruction set the kernels were chosen for
  std::string precision = "fp32";  // fp32, bf16 or int8: what the matrix kernels compute in
  int64_t batch = 1;         // what inputs and outputs carry
  // The batch the graph was compiled for: one run of the plan runs it batch / micro_batch
  // times over consecutive slices of the batch (its items are independent: passes/batch_axis.cc),
  // so a large batch keeps a small batch's working set in the caches.
  int64_t micro_batch = 1;
  bool optimized = true;
  CompileStats stats;
  std::string kernel_log;    // per-node kernel choice and why faster ones were rejected
  ir::ImagePreprocess preprocess;  // enabled(): the input is a uint8 NHWC image batch
  // The nodes shaped at run time (passes/split_dynamic.cc), run by the interpreter after the
  // static graph; null when there are none. Its inputs name static outputs or model inputs;
  // its outputs are then the model's outputs (graph.outputs only feed it).
  std::shared_ptr<const ir::Graph> tail;
};

// How many runs of the graph make one run of the plan.
inline int64_t runs_per_batch(const Program& p) { return p.micro_batch > 0 ? p.batch / p.micro_batch : 1; }
// A graph input's or output's shape as the plan's callers see it: the batch dim scaled up
// from the micro-batch the graph was compiled for.
inline ir::Shape batch_shape(const Program& p, ir::Shape s) {
  if (runs_per_batch(p) > 1 && !s.empty()) s[0] *= runs_per_batch(p);
  return s;
}

// The model's outputs: the tail's where the program has one.
inline const ir::Graph& output_graph(const Program& p) { return p.tail ? *p.tail : p.graph; }
// An output's shape as its spec gives it: a dynamic one's as the model declares it, -1 where a
// dim is known only at run time ({-1} when the model declares nothing).
inline ir::Shape output_spec_shape(const ir::Tensor& t) { return t.dynamic && t.shape.empty() ? ir::Shape{-1} : t.shape; }
// Names of the tail's nodes, for `compile` to list ("" when there is no tail).
std::string dynamic_summary(const Program& p);

struct CompileOptions {
  int64_t batch = 1;
  // Runs a batch as batch / micro_batch runs of the network compiled for micro_batch (which
  // must divide it, and the model's items must be independent); 0 chooses (choose_micro_batch).
  int64_t micro_batch = 0;
  // Full shapes for named inputs (--shape NAME=1x3x48x320): they bind symbolic dims other
  // than the batch, and must agree with every dim the model fixes.
  std::map<std::string, ir::Shape> input_shapes;
  // fp32, bf16 or int8; int8 needs quantization parameters: a QDQ model's, or
  // `activation_quant` from calibration (tools: systolic quantize).
  passes::Precision precision = passes::Precision::fp32;
  bool precision_auto = false;  // int8 for a quantized (QDQ) model, else `precision`
  std::shared_ptr<const std::map<std::string, ir::QuantParams>> activation_quant;
  // int8 of a float model without activation_quant: computes it (runs a calibration plan).
  // Called only when a compile runs, so a compile-cache hit skips it; `calibration_key`
  // names its data for the cache.
  std::function<Expected<std::shared_ptr<const std::map<std::string, ir::QuantParams>>>(const ir::Graph&,
                                                                                         const CompileOptions&)>
      calibrate;
  std::string calibration_key;
  std::set<std::string> keep_fp32;  // int8: nodes left in float
  bool fuse_residual = true;        // false for calibration plans (see passes::PassContext)
  bool optimize = true;      // false: the reference executor's plan (plain layouts, ref kernels)
  CpuFeatures cpu;           // defaults to the host
  bool cpu_set = false;
  ir::ImagePreprocess preprocess;  // enabled(): take uint8 images, normalisation folded in
};

// Runs the pass pipeline; `after_pass` sees the graph after each pass (for --dump-passes).
Expected<std::shared_ptr<Program>> compile(ir::Graph graph, const CompileOptions& opts,
                                           const std::function<void(const char*, const ir::Graph&)>& after_pass = nullptr);

std::string isa_name(const CpuFeatures& cpu);
// The micro-batch for `batch` when one item's busiest node moves `item_bytes` of activations:
// the batch itself when it fits the caches (the cores' L2 plus 60% of the L3), else its largest
// divisor of at least 2 that fits, else the batch (nothing smaller fits either).
int64_t choose_micro_batch(int64_t batch, int64_t item_bytes, const CpuFeatures& cpu);
// Whether the model carries quantization (QuantizeLinear/DequantizeLinear or QLinear* ops).
bool is_quantized_model(const ir::Graph& g);
// Whether it has quantized convolutions, the work int8 plans run on int8 kernels (QLinearConv,
// ConvInteger, or a Conv whose weights come through a DequantizeLinear): such models
// default to int8. A model that quantizes only other ops (a QDQ MatMul network) defaults to
// fp32, which computes its Q/DQ pairs in float.
bool has_quantized_convs(const ir::Graph& g);
// Whether `cpu` can run every kernel the program was compiled for.
Status check_runnable(const Program& p, const CpuFeatures& cpu);

Status save_program(const Program& p, const std::string& path);
Expected<std::shared_ptr<Program>> load_program(const std::string& path);
Expected<std::shared_ptr<Program>> load_program_bytes(std::string_view bytes);
std::string serialize_program(const Program& p);
// The checksum a plan file ends with (8 bytes, over everything before it).
uint64_t plan_checksum(const char* data, std::size_t n);

}  // namespace systolic::plan
