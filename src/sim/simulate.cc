// Walks a compiled plan: each Conv (Gemm/MatMul became 1x1 convs) is a GEMM on the arrays,
// epilogue ops fused into it cost nothing, other ops run on the vector unit or are free.
#include <algorithm>
#include <map>

#include "interp/nn_geometry.h"
#include "sim/host_conv.h"
#include "sim/host_dw.h"
#include "sim/host_winograd.h"
#include "sim/simulate.h"

namespace systolic::sim {
namespace {

const char* act_label(int64_t a) {
  static const char* names[] = {"", "relu", "clip", "leaky_relu", "sigmoid", "hard_sigmoid", "hard_swish", "tanh"};
  return a >= 0 && a < 8 ? names[a] : "act";
}

// The epilogue a conv node fused in: "bias", "add" (a residual), the activation, joined by "+".
std::string fused_label(const ir::Node& n) {
  std::string f = n.in(2) >= 0 ? "bias" : "";
  if (n.in(3) >= 0) f += std::string(f.empty() ? "" : "+") + "add";
  if (n.has("act") && n.i("act", 0) != 0) f += std::string(f.empty() ? "" : "+") + act_label(n.i("act", 0));
  // An int8 conv's epilogue requantizes to its consumer's u8 (or dequantizes to float); a bf16
  // plan's producer rounds what a bf16 conv reads next.
  if (n.has("q_scale")) f += std::string(f.empty() ? "" : "+") + (n.i("q_out_f32", 0) ? "dequant" : "requant");
  if (n.i("bf16_out", 0) != 0) f += std::string(f.empty() ? "" : "+") + "round_bf16";
  return f;
}

bool is_free(ir::Op op, const target::Target& t) {
  if (op == ir::Op::Reorder) return !t.reorders_cost;
  switch (op) {
    case ir::Op::Reshape: case ir::Op::Flatten: case ir::Op::Squeeze: case ir::Op::Unsqueeze:
    case ir::Op::Identity: case ir::Op::Dropout: case ir::Op::Shape:
    case ir::Op::ConstantOfShape: case ir::Op::Range:
      return true;
    default: return false;
  }
}

struct Walk {
  const plan::Program& p;
  const target::Target& t;
  const SimOptions& o;
  int forced_bytes;  // every tensor at this size (a precision the options force), or 0: as the plan stores it
  double scale;      // requested batch / plan batch
  std::vector<bool> onchip;

  double elems(int id) const {
    const ir::Tensor& x = p.graph.t(id);
    double n = static_cast<double>(x.numel());
    if (!x.is_const() && !x.shape.empty() && x.shape[0] == p.micro_batch) n *= scale;
    return n;
  }
  // Bytes per element as the plan keeps the tensor: u8 activations of an int8 plan 1, float
  // ones 4, except in a bf16 plan, whose activations an accelerator would store as bf16 (the CPU
  // plan keeps them in float, rounded to bf16 values).
  int elem_bytes(int id) const {
    if (forced_bytes > 0) return forced_bytes;
    const ir::DType d = p.graph.t(id).dtype;
    if (d == ir::DType::f32) return p.precision == "bf16" ? 2 : 4;
    const int b = static_cast<int>(ir::dtype_size(d));
    return b > 0 ? b : 4;
  }
  double tbytes(int id) const { return id < 0 ? 0 : elems(id) * elem_bytes(id); }
  bool resident(int id) const { return id >= 0 && (p.graph.t(id).is_const() ? false : onchip[id]); }
};

// The precision a matrix node of the plan computes in: int8 (u8 activations, s8 weights), bf16
// (lower_bf16's mark) or fp32.
std::string node_precision(const ir::Graph& g, const ir::Node& n) {
  const int x = n.in(0);
  if (x >= 0 && (g.t(x).dtype == ir::DType::u8 || g.t(x).dtype == ir::DType::i8)) return "int8";
  if (n.op == ir::Op::Conv && n.i("bf16", 0) != 0) return "bf16";
  return "fp32";
}

int precision_bytes(const std::string& p) { return p == "int8" ? 1 : p == "bf16" ? 2 : 4; }

// The rate a layer of `want` precision runs at on `t`: its own where the matrix unit has it;
// else the cheapest precision that holds its values exactly (int8 values are exact in bf16,
// bf16 in fp32); else, as resolve_precision does, the default precision's rate.
target::PrecisionRate layer_rate(const target::Target& t, const std::string& want, std::string* used_for) {
  if (const auto* r = t.rate(want)) return *r;
  for (const char* sub : {"bf16", "fp32"}) {
    if (want == "fp32" || (want == "bf16" && std::string(sub) == "bf16")) continue;
    if (const auto* r = t.rate(sub)) {
      *used_for = sub;
      return *r;
    }
  }
  target::PrecisionRate r = *t.rate(t.default_precision);
  *used_for = r.name;
  return r;
}

Status gemm_of_node(const Walk& w, const ir::Node& n, GemmShape* g, std::string* label, kernels::ConvParams* conv) {
  const ir::Graph& gr = w.p.graph;
  const int64_t batch = w.o.batch > 0 ? w.o.batch : w.p.batch;
  if (n.op == ir::Op::Conv) {
    kernels::ConvParams cp;
    if (n.has("conv_params")) {
      if (!interp::decode_conv_params(n.ints("conv_params"), &cp)) return Err("Conv %s: bad conv_params", n.name.c_str());
    } else {
      SYSTOLIC_RETURN_IF_ERROR(interp::conv_geometry(n, gr.t(n.inputs[0]).shape, gr.t(n.inputs[1]).shape, &cp));
    }
    if (cp.n == w.p.micro_batch) cp.n = static_cast<int>(batch);
    *conv = cp;
    g->groups = cp.groups;
    g->m = static_cast<int64_t>(cp.n) * cp.oh * cp.ow;
    g->k = static_cast<int64_t>(cp.kh) * cp.kw * (cp.ic / cp.groups);
    g->n = cp.oc / cp.groups;
    *label = "conv";
    return Status::Ok();
  }
  // MatMul / Gemm left as such: A [..., M, K] x B [K, N].
  const ir::Shape& a = gr.t(n.inputs[0]).shape;
  const ir::Shape& b = gr.t(n.inputs[1]).shape;
  if (a.size() < 2 || b.size() < 2) return Err("%s %s: operands must be at least 2-D", ir::op_name(n.op), n.name.c_str());
  const bool ta = n.op == ir::Op::Gemm && n.i("transA", 0), tb = n.op == ir::Op::Gemm && n.i("transB", 0);
  g->k = ta ? a[a.size() - 2] : a.back();
  g->m = static_cast<int64_t>(w.elems(n.inputs[0]) / g->k);
  g->n = tb ? b[b.size() - 2] : b.back();
  *label = "matmul";
  return Status::Ok();
}

double vector_work(const Walk& w, const ir::Node& n, std::string* op) {
  const double out = n.outputs.empty() || n.outputs[0] < 0 ? 0 : w.elems(n.outputs[0]);
  switch (n.op) {
    case ir::Op::MaxPool: case ir::Op::AveragePool: {
      *op = "pool";
      double win = 1;
      for (int64_t k : n.ints("kernel_shape")) win *= static_cast<double>(k);
      return out * win;
    }
    case ir::Op::GlobalAveragePool: case ir::Op::GlobalMaxPool: case ir::Op::ReduceMean:
      *op = "pool";
      return w.elems(n.inputs[0]);
    case ir::Op::Softmax: case ir::Op::LRN:
      *op = "eltwise";
      return 4 * out;
    case ir::Op::Concat: case ir::Op::Split: case ir::Op::Slice: case ir::Op::Transpose: case ir::Op::Pad:
    case ir::Op::Gather: case ir::Op::Expand: case ir::Op::Cast: case ir::Op::Where: case ir::Op::Reorder:
      *op = n.op == ir::Op::Reorder ? "reorder" : "move";
      return out;
    default: {
      *op = "eltwise";
      int used = 0;
      for (int id : n.inputs) used += id >= 0 && !w.p.graph.t(id).is_const();
      return out * std::max(1, used);
    }
  }
}

}  // namespace

Expected<target::PrecisionRate> begin_report(const target::Target& t, const SimOptions& o, int64_t default_batch,
                                             SimReport* r) {
  r->target = t.name;
  r->convention = o.convention == Convention::scalesim ? "scalesim" : "native";
  auto rate = resolve_precision(t, o, &r->notes);
  if (!rate.ok()) return rate.status();
  r->precision = rate->name;
  r->batch = o.batch > 0 ? o.batch : default_batch;
  return rate;
}

Expected<SimReport> simulate_program(const plan::Program& p, const target::Target& t, const SimOptions& o) {
  SimReport r;
  auto rate = begin_report(t, o, p.batch, &r);
  if (!rate.ok()) return rate.status();
  // Without a forced precision every matrix layer runs in the plan's own precision for it.
  const bool forced = !o.precision.empty();
  if (!forced) {
    r.notes.clear();
    r.precision = p.precision;
    if (!t.rate(t.default_precision))
      return Err("target %s has no rate for its default precision %s", t.name.c_str(), t.default_precision.c_str());
  }
  std::map<std::string, int> substituted;        // "int8 as bf16" -> layers
  std::map<std::string, double> macs_by_rate;    // effective precision -> MACs
  std::map<std::string, target::PrecisionRate> rates;
  Walk w{p, t, o, forced ? rate->bytes : 0, static_cast<double>(r.batch) / std::max<int64_t>(1, p.micro_batch), {}};
  // Activations no larger than a quarter of on-chip memory stay there between producer and
  // consumers (graph inputs arrive from, and outputs leave to, off-chip memory).
  const ir::Graph& g = p.graph;
  w.onchip.assign(g.tensors.size(), false);
  const double keep = t.onchip_capacity() / 4.0;
  for (std::size_t i = 0; i < g.tensors.size(); ++i)
    w.onchip[i] = !g.tensors[i].is_const() && w.tbytes(static_cast<int>(i)) <= keep;
  for (int id : g.inputs) w.onchip[id] = false;
  for (int id : g.outputs) w.onchip[id] = false;
  // A free op (a reshape; a layout Reorder an accelerator's compiler folds away) moves no data:
  // its output is where its input is, so a graph input or output behind one still crosses
  // off-chip (the first conv reads the image from HBM, the last one writes the logits there).
  for (bool changed = true; changed;) {
    changed = false;
    for (const ir::Node& n : g.nodes) {
      if (!is_free(n.op, t) || n.inputs.empty() || n.inputs[0] < 0 || n.outputs.empty() || n.outputs[0] < 0) continue;
      const int in = n.inputs[0], out = n.outputs[0];
      if (g.t(in).is_const()) continue;
      const bool both = w.onchip[in] && w.onchip[out];
      if (w.onchip[in] != both || w.onchip[out] != both) {
        w.onchip[in] = w.onchip[out] = both;
        changed = true;
      }
    }
  }

  // Host: do the plan's conv weights stay in the L3 from one run to the next?
  double weight_total = 0;
  for (const ir::Node& n : g.nodes)
    if (n.op == ir::Op::Conv && n.in(1) >= 0) weight_total += static_cast<double>(g.t(n.in(1)).numel()) * 4;
  const bool weights_from_dram = weight_total > static_cast<double>(t.host_conv.l3_bytes);

  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const ir::Node& n = g.nodes[k];
    const std::string name = n.name.empty() ? std::string(ir::op_name(n.op)) + "_" + std::to_string(k) : n.name;
    if (is_free(n.op, t)) continue;
    const int out = n.outputs.empty() ? -1 : n.outputs[0];
    if (n.op == ir::Op::Conv || n.op == ir::Op::MatMul || n.op == ir::Op::Gemm) {
      GemmShape gs;
      std::string label;
      kernels::ConvParams cp;
      SYSTOLIC_RETURN_IF_ERROR(gemm_of_node(w, n, &gs, &label, &cp));
      // On a host-style target a depthwise conv runs on the vector units (kernels/conv/conv_dw.h),
      // not as a GEMM: its MACs are vector work and it streams its activations like the other
      // vector steps, or as the depthwise kernel's reads, writes and output rows at their
      // calibrated costs (sim/host_dw.h) when the host has them. (As a GEMM, one output channel
      // per group on a 1 x W array, MobileNetV2's depthwise convs came out 5-11x their measured
      // time; as bytes at one calibrated rate, its 7x7 ones 47-73% under on a 2-core Zen 5.)
      if (n.op == ir::Op::Conv && t.vector_gbs > 0 && n.s("kernel", "").find("_dw_") != std::string::npos) {
        const double macs = double(cp.n) * cp.oh * cp.ow * cp.oc * (cp.ic / std::max(1, cp.groups)) * cp.kh * cp.kw;
        double on = 0, off = 0;
        for (int id : {n.in(0), n.in(3), out}) {
          if (id < 0) continue;
          on += w.tbytes(id);
          if (!w.resident(id)) off += w.tbytes(id);
        }
        const double written = out >= 0 ? w.tbytes(out) : 0;
        LayerCost l = cost_vector(name, "depthwise", macs, on, off, t, o, host_dw_cycles(cp, on - written, written, t));
        l.fused = fused_label(n);
        r.layers.push_back(std::move(l));
        continue;
      }
      const std::string plan_prec = forced ? rate->name : node_precision(g, n);
      std::string used;
      const target::PrecisionRate lrate = forced ? *rate : layer_rate(t, plan_prec, &used);
      if (!used.empty()) ++substituted[plan_prec + " as " + used];
      MatrixOperands ops;
      if (n.op == ir::Op::Conv && n.s("kernel", "").find("igemm") != std::string::npos) {
        double step = 1.0 / lrate.macs_per_pe_cycle;
        const target::Target tk = host_conv_for_kernel(t, n.s("kernel", ""), &step);
        ops.host_cycles = host_conv_time(cp, tk, step, weights_from_dram, n.in(3) >= 0).cycles;
      } else if (const int tile = n.op == ir::Op::Conv ? winograd_tile_of(n.s("kernel", "")) : 0)
        ops.host_cycles = host_winograd_time(cp, tile, t, 1.0 / lrate.macs_per_pe_cycle, weights_from_dram).cycles;
      ops.input_bytes = w.tbytes(n.in(0));
      ops.input_onchip = w.resident(n.in(0));
      ops.weight_bytes = static_cast<double>(gs.k) * gs.n * gs.groups * (forced ? rate->bytes : precision_bytes(plan_prec));
      if (n.op == ir::Op::MatMul && !g.t(n.in(1)).is_const()) {
        ops.input_bytes += w.tbytes(n.in(1));
        ops.weight_bytes = 0;
      }
      ops.output_bytes = w.tbytes(out);
      ops.output_onchip = w.resident(out);
      if (n.op == ir::Op::Conv && n.in(3) >= 0) {
        ops.residual_bytes = w.tbytes(n.in(3));
        ops.residual_onchip = w.resident(n.in(3));
      }
      LayerCost l = cost_matrix(name, gs, ops, t, lrate, o);
      l.op = label;
      l.fused = fused_label(n);
      l.precision = lrate.name;
      l.plan_precision = plan_prec;
      macs_by_rate[lrate.name] += static_cast<double>(gs.macs());
      rates[lrate.name] = lrate;
      r.layers.push_back(std::move(l));
      continue;
    }
    std::string op;
    const double work = vector_work(w, n, &op);
    double on = 0, off = 0;
    for (int id : n.inputs) {
      if (id < 0 || g.t(id).is_const()) continue;
      on += w.tbytes(id);
      if (!w.resident(id)) off += w.tbytes(id);
    }
    for (int id : n.outputs) {
      if (id < 0) continue;
      on += w.tbytes(id);
      if (!w.resident(id)) off += w.tbytes(id);
    }
    // The measured host's Reorder: its loop's cost per element, where that outlasts its bytes.
    double stream = 0;
    if (n.op == ir::Op::Reorder && t.reorder_elem_ns > 0 && !n.outputs.empty() && n.outputs[0] >= 0) {
      const double elems = w.elems(n.outputs[0]);
      const double bytes_ns = t.vector_gbs > 0 ? on / t.vector_gbs : 0;  // bytes / (GB/s) = ns
      stream = std::max(bytes_ns, elems * t.reorder_elem_ns) * t.clock_ghz;
    }
    LayerCost l = cost_vector(name, op, work, on, off, t, o, stream);
    if (n.op == ir::Op::Reorder) {  // the runtime's reorder is a plain loop on the caller: no dispatch
      l.total_cycles -= l.overhead_cycles;
      l.overhead_cycles = 0;
      l.stall_cycles = l.total_cycles - l.compute_cycles;
      l.time_us = l.total_cycles / (t.clock_ghz * 1e3);
      l.bound = l.memory_cycles > l.compute_cycles ? "memory" : "compute";
    }
    r.layers.push_back(std::move(l));
  }
  if (forced || rates.empty()) {
    finish_report(&r, t, *rate);
    return r;
  }
  for (const auto& [what, count] : substituted) {
    const std::string from = what.substr(0, what.find(' ')), to = what.substr(what.rfind(' ') + 1);
    r.notes.push_back(t.name + " has no " + from + " matrix rate: the plan's " + std::to_string(count) + " " + from +
                      " layer" + (count == 1 ? "" : "s") + " run at its " + to + " rate" +
                      (from == "int8" && to == "bf16" ? " (8-bit values are exact in bf16)"
                       : from != "fp32" && to == "fp32" ? " (exact)" : "") +
                      "; operands keep the plan's sizes in memory");
  }
  // Utilization against the peak of the precision that carries most of the MACs.
  std::string dominant = rates.begin()->first;
  for (const auto& [name, macs] : macs_by_rate)
    if (macs > macs_by_rate[dominant]) dominant = name;
  finish_report(&r, t, rates[dominant]);
  return r;
}

}  // namespace systolic::sim
