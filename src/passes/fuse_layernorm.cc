// LayerNorm fusion: exporters of opsets before 17 write layer normalization over the last axis
// as ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, then Mul by the scale and Add the
// bias (nine nodes, four passes over the tensor); this pass makes them one LayerNormalization
// node, which the runtime runs as one kernel.
#include "passes/pass.h"
#include "passes/pattern.h"

namespace systolic::passes {
namespace {

// Whether ReduceMean `n` averages only the last axis of its rank-r input, keeping it.
bool mean_of_last_axis(const ir::Graph& g, const ir::Node& n) {
  if (n.op != ir::Op::ReduceMean || n.i("keepdims", 1) != 1 || n.i("axes_as_input", 0)) return false;
  const int64_t r = static_cast<int64_t>(g.t(n.inputs[0]).shape.size());
  const auto axes = n.ints("axes");
  return r > 0 && axes.size() == 1 && (axes[0] == -1 || axes[0] == r - 1);
}

// A float constant of C values that broadcasts along the last axis only ([C], [1,..,1,C]).
bool per_channel(const ir::Graph& g, int id, int64_t C) {
  if (id < 0) return false;
  const ir::Tensor& t = g.t(id);
  return t.is_const() && t.dtype == ir::DType::f32 && t.numel() == C && !t.shape.empty() && t.shape.back() == C;
}

}  // namespace

Status fuse_layernorm(ir::Graph& g, PassContext&) {
  auto consumers = g.consumers();
  auto producers = g.producers();
  auto only = [&](int t, ir::Op op) { return only_consumer(g, consumers, t, op); };
  std::vector<char> drop(g.nodes.size(), 0);
  std::vector<ir::Node> fused;  // (placed at the last matched node's index)
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const ir::Node& sub = g.nodes[k];
    if (sub.op != ir::Op::Sub || sub.inputs.size() != 2 || drop[k]) continue;
    const int x = sub.inputs[0], mean = sub.inputs[1], pm = producers[mean];
    if (g.t(x).dtype != ir::DType::f32 || pm < 0 || !mean_of_last_axis(g, g.nodes[pm]) || g.nodes[pm].inputs[0] != x ||
        consumers[mean].size() != 1 || g.is_graph_output(mean))
      continue;
    const int d = sub.outputs[0];
    if (consumers[d].size() != 2 || g.is_graph_output(d)) continue;
    int pw = -1, dv = -1;
    for (int c : consumers[d]) {
      if (g.nodes[c].op == ir::Op::Div && g.nodes[c].inputs[0] == d) dv = c;
      float e;
      if (g.nodes[c].op == ir::Op::Pow && g.nodes[c].inputs[0] == d && scalar_const(g, g.nodes[c].inputs[1], &e) && e == 2.f)
        pw = c;
      if (g.nodes[c].op == ir::Op::Mul && g.nodes[c].inputs.size() == 2 && g.nodes[c].inputs[0] == d &&
          g.nodes[c].inputs[1] == d)
        pw = c;
    }
    if (pw < 0 || dv < 0) continue;
    const int var = only(g.nodes[pw].outputs[0], ir::Op::ReduceMean);
    if (var < 0 || !mean_of_last_axis(g, g.nodes[var])) continue;
    const int add = only(g.nodes[var].outputs[0], ir::Op::Add);
    float eps;
    if (add < 0 || !scalar_const(g, other_operand(g.nodes[add], g.nodes[var].outputs[0]), &eps)) continue;
    const int sq = only(g.nodes[add].outputs[0], ir::Op::Sqrt);
    if (sq < 0 || g.nodes[dv].inputs[1] != g.nodes[sq].outputs[0] || only(g.nodes[sq].outputs[0], ir::Op::Div) != dv)
      continue;
    std::vector<int> nodes = {pm, static_cast<int>(k), pw, var, add, sq, dv};
    const int64_t C = g.t(x).shape.back();
    int y = g.nodes[dv].outputs[0], scale = -1, bias = -1;
    if (const int mul = only(y, ir::Op::Mul); mul >= 0 && per_channel(g, other_operand(g.nodes[mul], y), C)) {
      scale = other_operand(g.nodes[mul], y);
      nodes.push_back(mul);
      y = g.nodes[mul].outputs[0];
      if (const int ad = only(y, ir::Op::Add); ad >= 0 && per_channel(g, other_operand(g.nodes[ad], y), C)) {
        bias = other_operand(g.nodes[ad], y);
        nodes.push_back(ad);
        y = g.nodes[ad].outputs[0];
      }
    }
    bool taken = false;
    for (int i : nodes) taken |= drop[i] != 0;
    if (taken) continue;
    ir::Node ln;
    ln.op = ir::Op::LayerNormalization;
    ln.name = sub.name + ".layernorm";
    ln.set_i("axis", -1);
    ln.set_f("epsilon", eps);
    ln.set_i("_opset", 17);
    auto flat = [&](int id, float fill) {
      std::vector<float> v(static_cast<std::size_t>(C), fill);
      if (id >= 0) std::copy(g.t(id).as<float>(), g.t(id).as<float>() + C, v.begin());
      return g.add_const_f32(g.fresh_name(ln.name + (fill == 1.f ? ".scale" : ".bias")), {C}, v);
    };
    ln.inputs = {x, flat(scale, 1.f), flat(bias, 0.f)};
    ln.outputs = {y};
    int last = nodes[0];
    for (int i : nodes) last = std::max(last, i);
    for (int i : nodes) drop[i] = 1;
    drop[last] = 0;
    g.nodes[last] = ln;  // (sub is not used past this point)
  }
  g.remove_nodes(drop);
  return Status::Ok();
}

}  // namespace systolic::passes
