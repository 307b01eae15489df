// int8 tables: element-wise float ops that read one quantized tensor x (and scalar constants)
// and end in quantized tensors become one Lut node per output: x has 256 values on its uint8
// grid, so the output's bytes for each are computed here, once, by the reference interpreter.
// EfficientNet's SiLU (a QDQ model's Conv -> Q/DQ -> Sigmoid -> Q/DQ -> Mul -> Q/DQ) and
// MobileNetV3's HardSwish then run as one uint8 lookup between int8 convs, where they ran as
// float passes with a Dequantize and a Quantize around them. A QDQ model's roundings between
// the ops (a quantized intermediate) are in the table, as the model specifies.
//
// int8 plans only. It runs before fuse_epilogue (a QDQ model's annotations are there; the
// activation would otherwise fuse into the conv, which then writes float) and again after
// annotate_activations (a calibrated model's SiLU, whose input is a conv's output).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "interp/eval.h"
#include "passes/pass.h"

namespace systolic::passes {
namespace {

using ir::DType;
using ir::Op;

bool quantized(const ir::Tensor& t) {
  return !t.is_const() && t.dtype == DType::f32 && t.quant.per_tensor() && t.quant.qtype == DType::u8 &&
         t.quant.scale[0] > 0.f && t.quant.zero_point[0] >= 0 && t.quant.zero_point[0] <= 255;
}

bool scalar_const(const ir::Graph& g, int t) { return t >= 0 && g.t(t).is_const() && g.t(t).dtype == DType::f32 && g.t(t).numel() == 1; }

// Ops whose value at each element depends on that element alone, defined (no NaN from a
// finite input) everywhere; for binary ops, `i` is the operand that may be a region tensor
// (Div: the dividend only).
bool tabulable(Op op, std::size_t i) {
  switch (op) {
    case Op::Relu: case Op::LeakyRelu: case Op::Sigmoid: case Op::HardSigmoid: case Op::HardSwish: case Op::Tanh:
    case Op::Neg: case Op::Abs: case Op::Silu: case Op::Gelu: case Op::Erf: case Op::Elu: case Op::Selu:
    case Op::Softplus: case Op::Softsign: case Op::Clip: case Op::Identity:
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Max: case Op::Min:
      return true;
    case Op::Div: return i == 0;
    default: return false;
  }
}

// What a uint8 clamp in an int8 kernel's epilogue does as well: no table for these alone.
bool clamp_only(Op op) { return op == Op::Relu || op == Op::Clip || op == Op::Identity; }

struct Region {
  std::vector<int> nodes;    // indices into g.nodes, in order
  std::vector<int> outputs;  // tensors read outside the region
};

// The element-wise ops reachable from x through tabulable ops, without those in `excluded`.
Region grow(const ir::Graph& g, int x, int from, const std::set<int>& excluded) {
  Region r;
  std::set<int> inside = {x};
  for (int k = from; k < static_cast<int>(g.nodes.size()); ++k) {
    const ir::Node& n = g.nodes[k];
    if (excluded.count(k) || n.outputs.size() != 1 || n.outputs[0] < 0) continue;
    bool reads = false, ok = true;
    for (std::size_t i = 0; i < n.inputs.size() && ok; ++i) {
      const int in = n.inputs[i];
      if (in < 0) continue;
      if (inside.count(in)) reads = true, ok = tabulable(n.op, i);
      else ok = scalar_const(g, in);
    }
    const ir::Tensor& y = g.t(n.outputs[0]);
    if (!reads || !ok || !tabulable(n.op, 0) || y.dtype != DType::f32 || y.shape != g.t(x).shape) continue;
    r.nodes.push_back(k);
    inside.insert(n.outputs[0]);
  }
  return r;
}

struct Tables {
  ir::Graph& g;
  PassContext& ctx;
  std::vector<std::vector<int>> consumers;

  // The region's tensors that something outside it reads (or the graph outputs).
  std::vector<int> outputs_of(const Region& r) const {
    std::set<int> nodes(r.nodes.begin(), r.nodes.end());
    std::vector<int> out;
    for (int k : r.nodes) {
      const int y = g.nodes[k].outputs[0];
      bool outside = g.is_graph_output(y);
      for (int c : consumers[y]) outside |= !nodes.count(c);
      if (outside) out.push_back(y);
    }
    return out;
  }

  // The largest region from x whose every output is quantized (an output that is not: its
  // producer leaves the region, and what depends on it).
  bool region_of(int x, int from, Region* r) const {
    std::set<int> excluded;
    for (;;) {
      *r = grow(g, x, from, excluded);
      if (r->nodes.empty()) return false;
      r->outputs = outputs_of(*r);
      int bad = -1;
      for (std::size_t i = 0; i < r->nodes.size() && bad < 0; ++i) {
        const int y = g.nodes[r->nodes[i]].outputs[0];
        const bool is_out = std::find(r->outputs.begin(), r->outputs.end(), y) != r->outputs.end();
        if (is_out && (!quantized(g.t(y)) || g.is_graph_output(y))) bad = r->nodes[i];
      }
      if (bad < 0) break;
      excluded.insert(bad);
    }
    bool worth = false;
    for (int k : r->nodes) {
      worth |= !clamp_only(g.nodes[k].op);
      if (ctx.keep_fp32.count(g.nodes[k].name)) return false;
    }
    return worth && !r->outputs.empty();
  }

  // The output bytes of `y` for each of x's 256 values; false where the ops cannot give one
  // (an error, or NaN).
  bool tabulate(int x, const Region& r, int y, std::vector<int64_t>* table) const {
    const ir::QuantParams& qx = g.t(x).quant;
    std::map<int, std::vector<float>> vals;
    std::vector<float>& xv = vals[x];
    for (int q = 0; q < 256; ++q) xv.push_back((static_cast<float>(q) - static_cast<float>(qx.zero_point[0])) * qx.scale[0]);
    for (int k : r.nodes) {
      const ir::Node& n = g.nodes[k];
      std::vector<interp::TensorRef> in;
      for (int t : n.inputs) {
        interp::TensorRef ref;
        if (t >= 0 && vals.count(t)) ref = {DType::f32, {256}, vals[t].data()};
        else if (t >= 0) ref = {DType::f32, {}, const_cast<float*>(g.t(t).as<float>())};
        in.push_back(ref);
      }
      std::vector<float>& out = vals[n.outputs[0]];
      out.assign(256, 0.f);
      if (!interp::eval_node(n, in, {{DType::f32, {256}, out.data()}}).ok()) return false;
      // A QDQ model rounds a quantized tensor between the ops to its grid.
      const ir::Tensor& t = g.t(n.outputs[0]);
      if (ctx.qdq_model && quantized(t) && n.outputs[0] != y)
        for (float& v : out) v = (std::nearbyint(std::fmin(std::fmax(v / t.quant.scale[0], float(-t.quant.zero_point[0])),
                                                           float(255 - t.quant.zero_point[0]))) + 0.f) * t.quant.scale[0];
      if (n.outputs[0] == y) break;
    }
    const ir::QuantParams& qy = g.t(y).quant;
    const float lo = static_cast<float>(-qy.zero_point[0]), hi = static_cast<float>(255 - qy.zero_point[0]);
    table->clear();
    for (float v : vals.at(y)) {
      if (std::isnan(v)) return false;
      table->push_back(static_cast<int64_t>(std::nearbyint(std::fmin(std::fmax(v / qy.scale[0], lo), hi))) + qy.zero_point[0]);
    }
    return true;
  }

  // Replaces the first region found; false when there is none left.
  bool replace_one(std::set<int>* tried) {
    consumers = g.consumers();
    const std::vector<int> producers = g.producers();
    for (std::size_t k = 0; k < g.nodes.size(); ++k) {
      for (int x : g.nodes[k].inputs) {
        if (x < 0 || tried->count(x) || !quantized(g.t(x))) continue;
        tried->insert(x);
        // A calibrated model's x is a conv output (the conv then writes uint8); a QDQ model
        // rounds x for every reader anyway.
        const int p = producers[x];
        if (!ctx.qdq_model && (p < 0 || g.nodes[p].op != Op::Conv)) continue;
        Region r;
        if (!region_of(x, p + 1, &r)) continue;
        std::vector<ir::Node> luts;
        for (int y : r.outputs) {
          std::vector<int64_t> table;
          if (!tabulate(x, r, y, &table)) {
            luts.clear();
            break;
          }
          ir::Node lut;
          lut.op = Op::Lut;
          lut.name = g.nodes[producers[y]].name;
          lut.inputs = {x};
          lut.outputs = {y};
          lut.set_ints("table", std::move(table));
          lut.set_floats("lut_x", {g.t(x).quant.scale[0], float(g.t(x).quant.zero_point[0])});
          lut.set_floats("lut_y", {g.t(y).quant.scale[0], float(g.t(y).quant.zero_point[0])});
          luts.push_back(std::move(lut));
        }
        if (luts.empty()) continue;
        std::string ops;
        for (int n : r.nodes) ops += std::string(ops.empty() ? "" : "+") + ir::op_name(g.nodes[n].op);
        ctx.log += "int8_tables: " + ops + " on " + g.t(x).name + " -> " + std::to_string(luts.size()) + " table(s)\n";
        // The tables take the first op's place: x is ready there.
        std::vector<char> drop(g.nodes.size(), 0);
        for (int n : r.nodes) drop[n] = 1;
        const int at = r.nodes[0];
        std::vector<ir::Node> nodes;
        for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
          if (i == at)
            for (ir::Node& l : luts) nodes.push_back(std::move(l));
          if (!drop[i]) nodes.push_back(std::move(g.nodes[i]));
        }
        g.nodes = std::move(nodes);
        return true;
      }
    }
    return false;
  }
};

}  // namespace

Status int8_tables(ir::Graph& g, PassContext& ctx) {
  if (ctx.precision != Precision::int8 || !ctx.optimize) return Status::Ok();
  Tables t{g, ctx, {}};
  std::set<int> tried;
  while (t.replace_one(&tried)) {
  }
  return Status::Ok();
}

}  // namespace systolic::passes
