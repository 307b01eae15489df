// Cost of one layer: compute cycles from the array mapping, on-chip and off-chip traffic
// (re-fetches when the working set exceeds on-chip memory), overlap and the binding resource.
#include <algorithm>
#include <cmath>

#include "sim/gpu_model.h"
#include "sim/simulate.h"

namespace systolic::sim {
namespace {

int64_t to_cycles(double bytes, double gbs, double ghz) {
  if (bytes <= 0 || gbs <= 0) return 0;
  return static_cast<int64_t>(std::ceil(bytes / gbs * ghz));  // bytes / (GB/s) = ns; ns * GHz = cycles
}

// Combines compute and memory time (overlapped when double-buffered) plus the launch cost.
void finish_layer(LayerCost* l, const target::Target& t, const SimOptions& o, int64_t prologue) {
  l->overhead_cycles = static_cast<int64_t>(std::llround(t.launch_overhead_us * 1e3 * t.clock_ghz));
  const int64_t body = o.double_buffer ? std::max(l->compute_cycles, l->memory_cycles) + std::min(prologue, l->memory_cycles)
                                       : l->compute_cycles + l->memory_cycles;
  l->total_cycles = l->overhead_cycles + body;
  l->stall_cycles = l->total_cycles - l->compute_cycles;
  l->time_us = l->total_cycles / (t.clock_ghz * 1e3);
  if (l->overhead_cycles > std::max(l->compute_cycles, l->memory_cycles)) l->bound = "overhead";
  else l->bound = l->memory_cycles > l->compute_cycles ? "memory" : "compute";
}

int64_t memory_cycles(double onchip, double offchip, const target::Target& t) {
  return std::max(to_cycles(onchip, t.onchip_bandwidth_gbs(), t.clock_ghz), to_cycles(offchip, t.offchip_gbs, t.clock_ghz));
}

// Off-chip bytes of a matrix op: each operand once when the weights fit in half the on-chip
// memory; otherwise the cheaper of re-fetching the weights per block of output rows, or
// re-reading the input per block of output channels.
double offchip_matrix_bytes(const GemmShape& g, const MatrixOperands& ops, const target::Target& t) {
  const double half = t.onchip_capacity() / 2.0;
  const double in = ops.input_onchip ? 0 : ops.input_bytes;
  double w_traffic = ops.weight_bytes, in_traffic = in;
  if (ops.weight_bytes > half && half > 0) {
    const double rows = static_cast<double>(g.m);
    const double row_bytes = ops.input_bytes / rows + static_cast<double>(g.n) * g.groups * 4;  // input + fp32 acc
    const double tm = std::max(1.0, std::floor(half / row_bytes));
    const double a = ops.weight_bytes * std::ceil(rows / tm) + in;
    const double bblocks = std::ceil(ops.weight_bytes / half);
    const double bb = ops.weight_bytes + in * bblocks;
    if (a <= bb) w_traffic = ops.weight_bytes * std::ceil(rows / tm);
    else in_traffic = in * bblocks;
  }
  return w_traffic + in_traffic + (ops.output_onchip ? 0 : ops.output_bytes) + (ops.residual_onchip ? 0 : ops.residual_bytes);
}

double peak_macs_per_cycle(const target::Target& t, const target::PrecisionRate& rate, bool one_array) {
  return (one_array ? 1.0 : t.arrays()) * t.rows * t.cols * rate.macs_per_pe_cycle;
}

// A GPU: the CTA tiling decides the tensor-core cycles and the L2 -> SM stream; the L2 is the
// on-chip level that decides what stays between layers and what comes from HBM.
LayerCost cost_gpu_matrix(const std::string& name, const GemmShape& g, const MatrixOperands& ops,
                          const target::Target& t, const target::PrecisionRate& rate, const SimOptions& o) {
  LayerCost l;
  l.name = name;
  l.op = "conv";
  l.matrix = true;
  l.gemm = g;
  const double out_bytes = g.m * g.n * g.groups > 0 ? ops.output_bytes / (double(g.m) * g.n * g.groups) : rate.bytes;
  const GpuTiling tl = gpu_tile_gemm(g, t, rate, out_bytes > 0 ? out_bytes : rate.bytes);
  l.map.sr = g.m;
  l.map.sc = g.n;
  l.map.t = g.k;
  l.map.folds = tl.tiles;
  l.map.split = tl.split_k;
  l.map.mapping_eff = tl.mapping_eff;
  l.compute_cycles = static_cast<int64_t>(std::ceil(tl.compute_cycles));
  l.map.cycles = l.compute_cycles;
  l.map.compute_util = l.compute_cycles > 0 ? double(g.macs()) / (peak_macs_per_cycle(t, rate, false) * l.compute_cycles) : 0;
  l.detail = tl.label();
  l.onchip_bytes = tl.l2_bytes;
  l.offchip_bytes = offchip_matrix_bytes(g, ops, t);
  l.memory_cycles = memory_cycles(l.onchip_bytes, l.offchip_bytes, t);
  finish_layer(&l, t, o, 0);
  return l;
}

}  // namespace

LayerCost cost_matrix(const std::string& name, const GemmShape& g, const MatrixOperands& ops,
                      const target::Target& t, const target::PrecisionRate& rate, const SimOptions& o) {
  const bool scalesim = o.convention == Convention::scalesim;
  if (t.gpu.enabled && !scalesim && ops.host_cycles <= 0) {
    LayerCost l = cost_gpu_matrix(name, g, ops, t, rate, o);
    l.util = l.total_cycles > 0 ? double(g.macs()) / (peak_macs_per_cycle(t, rate, false) * l.total_cycles) : 0;
    return l;
  }
  LayerCost l;
  l.name = name;
  l.op = "conv";
  l.matrix = true;
  l.gemm = g;
  l.map = map_gemm(g, t.rows, t.cols, scalesim ? 1 : t.arrays(), t.dataflow, o.convention);
  // A rate above one PE-MAC per cycle (int8 on v5e) shortens the streaming; below (fp32 as
  // three bf16 passes) lengthens it.
  l.compute_cycles = static_cast<int64_t>(std::ceil(ops.host_cycles > 0 ? ops.host_cycles : l.map.cycles / rate.macs_per_pe_cycle));
  const double b = rate.bytes;
  l.onchip_bytes = (l.map.stationary_elems + l.map.streamed_elems + l.map.output_elems) * b;

  l.offchip_bytes = offchip_matrix_bytes(g, ops, t);
  l.memory_cycles = memory_cycles(l.onchip_bytes, l.offchip_bytes, t);
  // Before the first fold can start, its stationary tile must arrive.
  const int64_t prologue = to_cycles(static_cast<double>(t.rows) * t.cols * b, t.offchip_gbs, t.clock_ghz);
  finish_layer(&l, t, o, scalesim ? 0 : prologue);
  if (scalesim) {
    l.overhead_cycles = 0;
    l.total_cycles = std::max(l.compute_cycles, l.memory_cycles);
    l.stall_cycles = l.total_cycles - l.compute_cycles;
    l.time_us = l.total_cycles / (t.clock_ghz * 1e3);
  }
  l.util = l.total_cycles > 0 ? double(g.macs()) / (peak_macs_per_cycle(t, rate, scalesim) * l.total_cycles) : 0;
  return l;
}

LayerCost cost_vector(const std::string& name, const std::string& op, double work_elems, double onchip_bytes,
                      double offchip_bytes, const target::Target& t, const SimOptions& o, double stream_cycles) {
  LayerCost l;
  l.name = name;
  l.op = op;
  l.compute_cycles = static_cast<int64_t>(std::ceil(work_elems / (t.vector_elems_per_cycle * t.cores)));
  l.onchip_bytes = onchip_bytes;
  l.offchip_bytes = offchip_bytes;
  // Host-style targets stream every byte a vector step touches at `vector_gbs`.
  l.memory_cycles = t.vector_gbs > 0 ? to_cycles(onchip_bytes, t.vector_gbs, t.clock_ghz)
                                     : memory_cycles(onchip_bytes, offchip_bytes, t);
  if (stream_cycles > 0) l.memory_cycles = static_cast<int64_t>(std::llround(stream_cycles));
  finish_layer(&l, t, o, 0);
  return l;
}

Expected<target::PrecisionRate> resolve_precision(const target::Target& t, const SimOptions& o,
                                                  std::vector<std::string>* notes) {
  const std::string want = o.precision.empty() ? t.default_precision : o.precision;
  if (want != "bf16" && want != "int8" && want != "fp32" && !t.rate(want))
    return Err("unknown precision '%s' (use bf16, int8 or fp32)", want.c_str());
  if (const auto* r = t.rate(want)) return *r;
  const target::PrecisionRate* base = t.rate(t.default_precision);
  if (!base) return Err("target %s has no rate for its default precision %s", t.name.c_str(), t.default_precision.c_str());
  // No matrix-unit rate for this precision: run at the default precision's rate, but keep
  // the requested precision's operand size (int8 still halves the bytes).
  target::PrecisionRate r = *base;
  r.name = want;
  r.bytes = want == "int8" ? 1 : want == "bf16" ? 2 : 4;
  notes->push_back(t.name + " has no " + want + " matrix rate; computed at its " + base->name + " rate with " +
                   std::to_string(r.bytes) + "-byte operands");
  return r;
}

void finish_report(SimReport* r, const target::Target& t, const target::PrecisionRate& rate) {
  double mapped = 0, matrix_macs = 0;
  r->total_cycles = r->compute_cycles = r->stall_cycles = 0;
  r->macs = r->onchip_bytes = r->offchip_bytes = 0;
  for (const auto& l : r->layers) {
    r->total_cycles += l.total_cycles;
    r->compute_cycles += l.compute_cycles;
    r->stall_cycles += l.stall_cycles;
    r->onchip_bytes += l.onchip_bytes;
    r->offchip_bytes += l.offchip_bytes;
    if (l.matrix) {
      r->macs += static_cast<double>(l.gemm.macs());
      matrix_macs += static_cast<double>(l.gemm.macs());
      mapped += l.map.mapping_eff * static_cast<double>(l.gemm.macs());
    }
  }
  r->latency_us = r->total_cycles / (t.clock_ghz * 1e3);
  r->throughput_per_s = r->latency_us > 0 ? r->batch / (r->latency_us * 1e-6) : 0;
  const double arrays = r->convention == "scalesim" ? 1.0 : t.arrays();
  const double peak_per_cycle = arrays * t.rows * t.cols * rate.macs_per_pe_cycle;
  r->mxu_util = r->total_cycles > 0 ? r->macs / (peak_per_cycle * r->total_cycles) : 0;
  r->mapping_eff = matrix_macs > 0 ? mapped / matrix_macs : 0;
}

}  // namespace systolic::sim
