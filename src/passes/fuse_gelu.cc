// GELU fusion: exporters write GELU as x * 0.5 * (1 + Erf(x / sqrt(2))) (five nodes); this pass
// makes it one Gelu node, and moves a Gelu that follows a Reshape of a conv's output (a
// transformer's linear layer, gemm_to_conv.cc) before the Reshape, so that fuse_epilogue folds
// it into the conv's epilogue (not where int8 makes it a table).
#include <cmath>

#include "passes/pass.h"
#include "passes/pattern.h"

namespace systolic::passes {
namespace {

bool near(float v, double want) { return std::fabs(v - want) <= 1e-4 * std::fabs(want); }

}  // namespace

Status fuse_gelu(ir::Graph& g, PassContext& ctx) {
  auto consumers = g.consumers();
  auto producers = g.producers();
  // The single consumer of tensor `t` when it has exactly one and is no graph output.
  auto only = [&](int t, ir::Op op) { return only_consumer(g, consumers, t, op); };
  std::vector<char> drop(g.nodes.size(), 0);
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const ir::Node& erf = g.nodes[k];
    if (erf.op != ir::Op::Erf || erf.outputs.empty() || g.t(erf.inputs[0]).dtype != ir::DType::f32) continue;
    const int scaled = erf.inputs[0], pd = producers[scaled];
    if (pd < 0 || consumers[scaled].size() != 1 || g.is_graph_output(scaled)) continue;
    const ir::Node& div = g.nodes[pd];
    float c;
    int x = -1;
    if (div.op == ir::Op::Div && scalar_const(g, div.inputs[1], &c) && near(c, std::sqrt(2.0))) x = div.inputs[0];
    if (div.op == ir::Op::Mul) {
      for (int side = 0; side < 2 && x < 0; ++side)
        if (scalar_const(g, div.inputs[1 - side], &c) && near(c, std::sqrt(0.5))) x = div.inputs[side];
    }
    if (x < 0) continue;
    const int add = only(erf.outputs[0], ir::Op::Add);
    if (add < 0 || !scalar_const(g, other_operand(g.nodes[add], erf.outputs[0]), &c) || c != 1.f) continue;
    const int m1 = only(g.nodes[add].outputs[0], ir::Op::Mul);
    if (m1 < 0) continue;
    const int f = other_operand(g.nodes[m1], g.nodes[add].outputs[0]);
    std::vector<int> nodes = {pd, static_cast<int>(k), add, m1};
    int y = -1;
    if (f == x) {  // (x * (1 + erf)) * 0.5
      const int m2 = only(g.nodes[m1].outputs[0], ir::Op::Mul);
      if (m2 < 0 || !scalar_const(g, other_operand(g.nodes[m2], g.nodes[m1].outputs[0]), &c) || c != 0.5f) continue;
      nodes.push_back(m2);
      y = g.nodes[m2].outputs[0];
    } else if (const int ph = f >= 0 ? producers[f] : -1;  // (x * 0.5) * (1 + erf)
               ph >= 0 && g.nodes[ph].op == ir::Op::Mul && other_operand(g.nodes[ph], x) >= 0 &&
               scalar_const(g, other_operand(g.nodes[ph], x), &c) && c == 0.5f && only(f, ir::Op::Mul) == m1) {
      nodes.push_back(ph);
      y = g.nodes[m1].outputs[0];
    } else {
      continue;
    }
    bool taken = false;
    for (int i : nodes) taken |= drop[i] != 0;
    if (taken) continue;
    // The Gelu takes the place of the last node (its output's producer), the rest go.
    int last = nodes[0];
    for (int i : nodes) last = std::max(last, i);
    for (int i : nodes) drop[i] = i != last;
    ir::Node& gelu = g.nodes[last];
    gelu.op = ir::Op::Gelu;
    gelu.name = erf.name + ".gelu";
    gelu.attrs.clear();
    gelu.inputs = {x};
    gelu.outputs = {y};
  }
  g.remove_nodes(drop);

  // Gelu(Reshape(conv output)) -> Reshape(Gelu(conv output)): element-wise, so the same values.
  consumers = g.consumers();
  producers = g.producers();
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    if (g.nodes[k].op != ir::Op::Gelu) continue;
    const int r = producers[g.nodes[k].inputs[0]];
    if (r < 0 || g.nodes[r].op != ir::Op::Reshape || only(g.nodes[r].outputs[0], ir::Op::Gelu) != static_cast<int>(k))
      continue;
    const int c = g.nodes[r].inputs[0], pc = producers[c];
    if (pc < 0 || g.nodes[pc].op != ir::Op::Conv || consumers[c].size() != 1 || g.is_graph_output(c)) continue;
    // Where the GELU's input has a uint8 grid (a QDQ model's, a calibrated one's) it is a table
    // between two grids in int8 (int8_tables), and a calibration plan measures that input.
    const std::string& in = g.t(g.nodes[r].outputs[0]).name;
    if (!ctx.fuse_residual || (ctx.precision == Precision::int8 &&
                               (!g.t(g.nodes[r].outputs[0]).quant.empty() ||
                                (ctx.activation_quant && ctx.activation_quant->count(in)))))
      continue;
    ir::Tensor mid = g.t(c);
    mid.name = g.fresh_name(g.nodes[k].name);
    mid.data = nullptr;
    const int m = g.add_tensor(mid);
    ir::Node gelu = g.nodes[k], reshape = g.nodes[r];
    gelu.inputs = {c};
    const int y = gelu.outputs[0];
    gelu.outputs = {m};
    reshape.inputs[0] = m;
    reshape.outputs = {y};
    g.nodes[r] = gelu;
    g.nodes[k] = reshape;
  }
  return Status::Ok();
}

}  // namespace systolic::passes
