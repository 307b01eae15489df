// Batch-norm folding: Conv followed by BatchNormalization becomes one Conv with scaled
// weights and a shifted bias (inference statistics are constants).
#include <cmath>

#include "passes/pass.h"

namespace systolic::passes {

Status fold_batchnorm(ir::Graph& g, PassContext&) {
  auto consumers = g.consumers();
  auto producers = g.producers();
  std::vector<char> drop(g.nodes.size(), 0);
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    ir::Node& bn = g.nodes[k];
    if (bn.op != ir::Op::BatchNormalization || bn.inputs.size() < 5) continue;
    const int x = bn.inputs[0];
    const int p = producers[x];
    if (p < 0 || g.nodes[p].op != ir::Op::Conv || consumers[x].size() != 1 || g.is_graph_output(x)) continue;
    ir::Node& conv = g.nodes[p];
    const ir::Tensor& w = g.t(conv.inputs[1]);
    bool all_const = w.is_const() && w.dtype == ir::DType::f32;
    for (int i = 1; i < 5; ++i) all_const &= g.t(bn.inputs[i]).is_const() && g.t(bn.inputs[i]).dtype == ir::DType::f32;
    const int bias_id = conv.in(2);
    if (bias_id >= 0) all_const &= g.t(bias_id).is_const();
    if (!all_const) continue;
    const int64_t oc = w.shape[0];
    const int64_t per_oc = w.numel() / oc;
    const float* gamma = g.t(bn.inputs[1]).as<float>();
    const float* beta = g.t(bn.inputs[2]).as<float>();
    const float* mean = g.t(bn.inputs[3]).as<float>();
    const float* var = g.t(bn.inputs[4]).as<float>();
    const double eps = bn.f("epsilon", 1e-5f);
    std::vector<float> nw(w.as<float>(), w.as<float>() + w.numel());
    std::vector<float> nb(oc, 0.f);
    for (int64_t c = 0; c < oc; ++c) {
      const double scale = gamma[c] / std::sqrt(static_cast<double>(var[c]) + eps);
      for (int64_t i = 0; i < per_oc; ++i) nw[c * per_oc + i] = static_cast<float>(nw[c * per_oc + i] * scale);
      const double b = bias_id >= 0 ? g.t(bias_id).as<float>()[c] : 0.0;
      nb[c] = static_cast<float>((b - mean[c]) * scale + beta[c]);
    }
    // Fresh constants: the originals may be shared with other nodes.
    const ir::Shape ws = w.shape;
    const std::string wname = w.name;
    conv.inputs[1] = g.add_const_f32(g.fresh_name(wname + ".bnfolded"), ws, nw);
    const int nbias = g.add_const_f32(g.fresh_name(conv.name + ".bias"), {oc}, nb);
    if (conv.inputs.size() < 3) conv.inputs.resize(3, -1);
    conv.inputs[2] = nbias;
    conv.outputs[0] = bn.outputs[0];
    drop[k] = 1;
  }
  g.remove_nodes(drop);
  return Status::Ok();
}

}  // namespace systolic::passes
