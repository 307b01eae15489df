// The systolic-array cost model over a compiled plan: per-layer cycles, utilization, traffic
// and the binding resource, and the whole model's latency and throughput on a Target.
#pragma once
#include <string>
#include <vector>

#include "base/status.h"
#include "plan/program.h"
#include "sim/gemm_model.h"
#include "target/target.h"

namespace systolic::sim {

struct SimOptions {
  // Empty: each matrix layer in the plan's precision for it (int8, bf16 or fp32), tensors at the
  // sizes the plan stores them. Set: every matrix layer at this precision and every tensor at
  // its size (what a SCALE-Sim topology, which has no precision, and the host check use).
  std::string precision;
  int64_t batch = 0;           // 0: the plan's; otherwise activations rescale to this batch
  Convention convention = Convention::native;
  bool double_buffer = true;   // transfers overlap compute
};

struct LayerCost {
  std::string name;
  std::string op;              // "conv", "matmul", "pool", "eltwise", "move", "depthwise" (host)
  std::string fused;           // epilogue ops folded into a matrix op ("relu+add")
  bool matrix = false;
  GemmShape gemm;
  GemmMapping map;
  int64_t compute_cycles = 0;  // matrix or vector unit
  int64_t memory_cycles = 0;   // max of on-chip and off-chip transfer time
  int64_t overhead_cycles = 0; // fixed launch cost
  int64_t total_cycles = 0;
  int64_t stall_cycles = 0;    // total - compute
  double onchip_bytes = 0, offchip_bytes = 0;
  double time_us = 0;
  double util = 0;             // matrix ops: MACs / (peak MACs per cycle at the layer's rate x total cycles)
  std::string bound;           // "compute", "memory" or "overhead"
  std::string detail;          // how it mapped where the table has no column for it (a GPU's CTA tiling)
  // Matrix ops: the precision the matrix unit ran and the one the plan computes the layer in
  // (they differ where the target lacks the plan's: int8 layers on a bf16-only TPU v3).
  std::string precision, plan_precision;
};

struct SimReport {
  std::string target, convention;
  std::string precision;  // the plan's (or the forced one)
  int64_t batch = 1;
  std::vector<LayerCost> layers;
  int64_t total_cycles = 0, compute_cycles = 0, stall_cycles = 0;
  double latency_us = 0, throughput_per_s = 0;
  double macs = 0;
  double mxu_util = 0;           // MACs / (peak MACs per cycle * total cycles)
  double mapping_eff = 0;        // MAC-weighted over matrix layers
  double onchip_bytes = 0, offchip_bytes = 0;
  std::vector<std::string> notes;
};

// Everything a layer needs besides its shape: operand sizes (bytes, at the precision) and
// whether each activation already sits on chip.
struct MatrixOperands {
  double input_bytes = 0, weight_bytes = 0, output_bytes = 0, residual_bytes = 0;
  bool input_onchip = false, output_onchip = false, residual_onchip = false;
  // When > 0, the compute cycles instead of the array mapping's: the measured host's conv kernel
  // replayed task by task (sim/host_conv.h: FMAs, tap setups, waits for weights, busiest thread).
  double host_cycles = 0;
};

// Cost of one matrix op / one vector op on `t` at precision `rate`.
LayerCost cost_matrix(const std::string& name, const GemmShape& g, const MatrixOperands& ops,
                      const target::Target& t, const target::PrecisionRate& rate, const SimOptions& o);
// `stream_cycles` > 0: the op's transfer time in core-cycles, as its own model has it (a host
// depthwise conv's, sim/host_dw.h), instead of its bytes at the target's bandwidth.
LayerCost cost_vector(const std::string& name, const std::string& op, double work_elems, double onchip_bytes,
                      double offchip_bytes, const target::Target& t, const SimOptions& o, double stream_cycles = 0);

// Resolves the precision (falling back, with a note, when the target lacks it).
// Fills the report's header (target, convention, precision, batch) and returns the precision's
// rate; default_batch is used when the options name none.
Expected<target::PrecisionRate> begin_report(const target::Target& t, const SimOptions& o, int64_t default_batch,
                                             SimReport* r);
Expected<target::PrecisionRate> resolve_precision(const target::Target& t, const SimOptions& o,
                                                  std::vector<std::string>* notes);

Expected<SimReport> simulate_program(const plan::Program& p, const target::Target& t, const SimOptions& o);

// Adds up the layers into the report's totals.
void finish_report(SimReport* r, const target::Target& t, const target::PrecisionRate& rate);

}  // namespace systolic::sim
