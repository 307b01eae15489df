// A pass is one function over the graph; the pipeline is a plain list (pipeline.cc).
#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/cpu.h"
#include "base/status.h"
#include "ir/graph.h"
#include "ir/preprocess.h"
#include "kernels/epilogue.h"

namespace systolic::passes {

// What the matrix kernels compute in.
enum class Precision : uint8_t { fp32, bf16, int8 };
const char* precision_name(Precision p);

// What batch_axis found: whether each item of the batch is computed from that item alone
// (then a plan for batch B may run as B/m runs of the network compiled for batch m), and if
// not, the first node that reads across items.
struct BatchSplit {
  bool separable = false;
  std::string why;         // why not
  int64_t item_bytes = 0;  // the most one node reads and writes of one item's activations
  uint64_t signature = 0;  // the graph's shapes with the batch dim marked
};

struct PassContext {
  CpuFeatures cpu;          // the target the program is compiled for
  Precision precision = Precision::fp32;
  // int8 from a float model: quantization of activations by tensor name (from calibration).
  const std::map<std::string, ir::QuantParams>* activation_quant = nullptr;
  std::set<std::string> keep_fp32;  // node names the int8 lowering leaves in float
  // false: residual Adds stay separate nodes, and so do SiLU's Sigmoid and Mul, a conv's
  // float-only activation (HardSwish: int8 plans make it a table) and the Concat before a
  // channel shuffle (a calibration plan measures the conv's own output, the sigmoid's and the
  // Concat's too, which a QDQ export and the int8 Concat quantize).
  bool fuse_residual = true;
  // Set by fold_qdq when the model carries its own activation quantization: every quantized
  // tensor is then rounded to its grid, as the model specifies, even between float ops.
  bool qdq_model = false;
  int64_t batch = 1;        // value for a symbolic leading input dim
  std::map<std::string, ir::Shape> input_shapes;  // bound shapes of named inputs (CompileOptions)
  bool optimize = true;     // false: only what the reference executor needs
  std::string log;          // kernel-selection notes ("why didn't X run")
  ir::ImagePreprocess preprocess;  // requested; bind_preprocess fills in the sizes it resolves
  // Set by split_dynamic: the nodes whose shapes are known only at run time, as a graph of
  // their own (null: none). Its inputs are static tensors and model inputs (by name), its
  // outputs the model's outputs.
  std::shared_ptr<ir::Graph> tail;
  BatchSplit batch_split;  // set by batch_axis
};

struct Pass {
  const char* name;
  Status (*run)(ir::Graph&, PassContext&);
};

// Passes, in pipeline order.
Status bind_preprocess(ir::Graph&, PassContext&);
Status bind_input_shapes(ir::Graph&, PassContext&);
Status constant_folding(ir::Graph&, PassContext&);
Status shape_inference(ir::Graph&, PassContext&);
Status split_dynamic(ir::Graph&, PassContext&);
Status batch_axis(ir::Graph&, PassContext&);
Status dead_code_elimination(ir::Graph&, PassContext&);
Status qoperator_to_qdq(ir::Graph&, PassContext&);
Status fold_qdq(ir::Graph&, PassContext&);
Status convtranspose_to_conv(ir::Graph&, PassContext&);
Status fold_batchnorm(ir::Graph&, PassContext&);
Status conv3d_to_conv2d(ir::Graph&, PassContext&);
Status prune_conv_taps(ir::Graph&, PassContext&);
Status fuse_layernorm(ir::Graph&, PassContext&);
Status rnn_input_projection(ir::Graph&, PassContext&);
Status gemm_to_conv(ir::Graph&, PassContext&);
Status fuse_gelu(ir::Graph&, PassContext&);
Status fuse_channel_shuffle(ir::Graph&, PassContext&);
Status reduce_mean_to_pool(ir::Graph&, PassContext&);
Status canonicalize_activations(ir::Graph&, PassContext&);
Status fuse_epilogue(ir::Graph&, PassContext&);
Status int8_tables(ir::Graph&, PassContext&);
Status fold_input_normalization(ir::Graph&, PassContext&);
Status annotate_activations(ir::Graph&, PassContext&);
Status lower_int8(ir::Graph&, PassContext&);
Status lower_bf16(ir::Graph&, PassContext&);
Status layout_assignment(ir::Graph&, PassContext&);
Status fuse_quantize_reorder(ir::Graph&, PassContext&);
Status fuse_lut(ir::Graph&, PassContext&);
Status fold_pad(ir::Graph&, PassContext&);
Status pack_weights(ir::Graph&, PassContext&);
Status store_bf16(ir::Graph&, PassContext&);
Status memory_plan(ir::Graph&, PassContext&);

// The activation node `n` computes, if an epilogue can apply it (Clip needs constant bounds).
bool as_activation(const ir::Graph& g, const ir::Node& n, kernels::Act* act, float* a, float* b);

// Whether an Add's output stays float in calibrated int8 (lower_int8, and the QDQ files
// systolic quantize writes): a normalization (or the mean that starts an unfused one) reads it.
// A transformer's residual stream carries a few channels far larger than the rest: one uint8
// scale for all of them rounds the others away.
// `consumers` indexes `nodes` (ir::Graph::consumers() of a graph holding them).
bool sum_stays_float(const std::vector<ir::Node>& nodes, const std::vector<std::vector<int>>& consumers,
                     const ir::Node& add);

// The name conv3d_to_conv2d gives the 4-D form [N*D, C, H, W] of a 5-D activation: calibration
// measures the values there, and the QDQ export finds the 5-D tensor's range under it.
inline std::string volume_held_name(const std::string& name) { return name + ".nd4"; }

// Shape inference of one node from its inputs' shapes (and constant values where needed).
Status infer_node(ir::Graph& g, ir::Node& n);
// Whether n's output shapes are known only at run time: it reads a dynamic tensor, is an If,
// or a value that shapes its output (Reshape's shape, NonZero's input, TopK's K, ...) is not
// a constant. mark_dynamic flags its outputs so.
bool dynamic_node(const ir::Graph& g, const ir::Node& n);
void mark_dynamic(ir::Graph& g, const ir::Node& n);

// The full compile pipeline (optimize) or the reference one (fold + infer only).
const std::vector<Pass>& pipeline(bool optimize);

// Runs the pipeline; calls `after` with each pass's name and the graph after it (may be null);
// stops after the pass named `last` when one is given.
Status run_pipeline(ir::Graph& g, PassContext& ctx,
                    const std::function<void(const char*, const ir::Graph&)>& after = nullptr,
                    const char* last = nullptr);

}  // namespace systolic::passes
