// Activation canonicalization: exporters write HardSwish as x * HardSigmoid(x) (alpha 1/6,
// beta 1/2) before opset 14; this pass turns the pair back into one HardSwish node so the
// epilogue fusion can fold it into the producing conv. SiLU (x * Sigmoid(x), EfficientNet's
// activation) becomes one Silu node: one element-wise pass where the pair took two and a
// tensor between them. Not where the sigmoid's output is quantized (a QDQ model rounds it) or
// observed (a calibration plan).
#include <cmath>

#include "passes/pass.h"

namespace systolic::passes {

Status canonicalize_activations(ir::Graph& g, PassContext& ctx) {
  auto consumers = g.consumers();
  auto producers = g.producers();
  std::vector<char> drop(g.nodes.size(), 0);
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    ir::Node& mul = g.nodes[k];
    if (mul.op != ir::Op::Mul || mul.inputs.size() != 2) continue;
    for (int side = 0; side < 2; ++side) {
      const int gate = mul.inputs[side], x = mul.inputs[1 - side];
      const int p = producers[gate];
      if (p < 0 || drop[p]) continue;
      const ir::Node& hs = g.nodes[p];
      if (hs.inputs.empty() || hs.inputs[0] != x || consumers[gate].size() != 1 || g.is_graph_output(gate)) continue;
      if (hs.op == ir::Op::Sigmoid && ctx.fuse_residual && g.t(gate).quant.empty() &&
          g.t(gate).dtype == ir::DType::f32) {
        mul.op = ir::Op::Silu;
        mul.inputs = {x};
        mul.attrs.clear();
        drop[p] = 1;
        break;
      }
      if (hs.op != ir::Op::HardSigmoid) continue;
      if (std::fabs(hs.f("alpha", 0.2f) - 1.f / 6.f) > 1e-6f || std::fabs(hs.f("beta", 0.5f) - 0.5f) > 1e-6f) continue;
      mul.op = ir::Op::HardSwish;
      mul.inputs = {x};
      mul.attrs.clear();
      drop[p] = 1;
      break;
    }
  }
  g.remove_nodes(drop);
  return Status::Ok();
}

}  // namespace systolic::passes
