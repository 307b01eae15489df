// Batch-norm folding: Conv followed by BatchNormalization becomes one Conv with scaled
// weights and a shifted bias (inference statistics are constants). A batch norm with no conv to
// fold into (DenseNet's and pre-activation ResNets' norm of a concatenation, before the ReLU)
// becomes x * s + t with per-channel constants: on 4-D data a 1x1 depthwise conv (weight s,
// bias t), which runs NHWC with the ReLU after it in its epilogue, where the interpreter's
// BatchNormalization ran plain behind a reorder each way; otherwise a Mul and an Add.
#include <cmath>

#include "passes/pass.h"

namespace systolic::passes {
namespace {

// The batch norm's per-channel affine, x * s + t: s = gamma / sqrt(var + eps), t = beta -
// mean * s, in double (the conv fold scales its weights by s and shifts its bias to b * s + t).
void bn_affine(const ir::Graph& g, const ir::Node& bn, int64_t c, std::vector<double>* s, std::vector<double>* t) {
  const float* gamma = g.t(bn.inputs[1]).as<float>();
  const float* beta = g.t(bn.inputs[2]).as<float>();
  const float* mean = g.t(bn.inputs[3]).as<float>();
  const float* var = g.t(bn.inputs[4]).as<float>();
  const double eps = bn.f("epsilon", 1e-5f);
  s->resize(c), t->resize(c);
  for (int64_t k = 0; k < c; ++k) {
    (*s)[k] = gamma[k] / std::sqrt(static_cast<double>(var[k]) + eps);
    (*t)[k] = beta[k] - mean[k] * (*s)[k];
  }
}

Status batchnorm_to_affine(ir::Graph& g) {
  std::vector<ir::Node> out;
  out.reserve(g.nodes.size());
  for (ir::Node& bn : g.nodes) {
    bool ok = bn.op == ir::Op::BatchNormalization && bn.inputs.size() >= 5 && bn.i("training_mode", 0) == 0;
    for (std::size_t k = 1; ok && k < bn.outputs.size(); ++k) ok = bn.outputs[k] < 0;
    const ir::Tensor* x = ok ? &g.t(bn.inputs[0]) : nullptr;
    ok = ok && x->dtype == ir::DType::f32 && x->shape.size() >= 2 && x->shape[1] > 0;
    for (int i = 1; ok && i < 5; ++i) {
      const ir::Tensor& p = g.t(bn.inputs[i]);
      ok = p.is_const() && p.dtype == ir::DType::f32 && p.numel() == x->shape[1];
    }
    if (!ok) {
      out.push_back(std::move(bn));
      continue;
    }
    const int64_t c = x->shape[1];
    std::vector<double> sd, td;
    bn_affine(g, bn, c, &sd, &td);
    const std::vector<float> s(sd.begin(), sd.end()), t(td.begin(), td.end());
    const int in = bn.inputs[0], y = bn.outputs[0];
    if (x->shape.size() == 4) {
      // A 1x1 depthwise conv: weight s, bias t. The conv kernels run it in one NHWC pass, and
      // the epilogue fusion folds the ReLU after it into the same pass.
      ir::Node conv;
      conv.op = ir::Op::Conv;
      conv.name = bn.name;
      conv.set_i("group", c);
      conv.set_ints("kernel_shape", {1, 1});
      conv.inputs = {in, g.add_const_f32(g.fresh_name(bn.name + ".s"), {c, 1, 1, 1}, s),
                     g.add_const_f32(g.fresh_name(bn.name + ".t"), {c}, t)};
      conv.outputs = {y};
      out.push_back(std::move(conv));
      continue;
    }
    ir::Shape ps(x->shape.size(), 1);
    ps[1] = c;
    ir::Tensor mid = *x;
    mid.name = g.fresh_name(bn.name + ".scaled");
    mid.data.reset();
    mid.quant = {};
    const int mid_id = g.add_tensor(std::move(mid));
    ir::Node mul;
    mul.op = ir::Op::Mul;
    mul.name = bn.name + ".scale";
    mul.inputs = {in, g.add_const_f32(g.fresh_name(bn.name + ".s"), ps, s)};
    mul.outputs = {mid_id};
    ir::Node add;
    add.op = ir::Op::Add;
    add.name = bn.name;
    add.inputs = {mid_id, g.add_const_f32(g.fresh_name(bn.name + ".t"), ps, t)};
    add.outputs = {y};
    out.push_back(std::move(mul));
    out.push_back(std::move(add));
  }
  g.nodes = std::move(out);
  return Status::Ok();
}

}  // namespace

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
    if (!all_const || w.shape.empty()) continue;
    const int64_t oc = w.shape[0];
    // One statistic per output channel, or it is not this conv's norm (a malformed model is
    // left for shape inference and the interpreter to name).
    bool per_oc_stats = true;
    for (int i = 1; i < 5; ++i) per_oc_stats &= g.t(bn.inputs[i]).numel() == oc;
    if (!per_oc_stats) continue;
    const int64_t per_oc = w.numel() / oc;
    std::vector<double> scale, shift;
    bn_affine(g, bn, oc, &scale, &shift);
    std::vector<float> nw(w.as<float>(), w.as<float>() + w.numel());
    std::vector<float> nb(oc, 0.f);
    for (int64_t c = 0; c < oc; ++c) {
      for (int64_t i = 0; i < per_oc; ++i) nw[c * per_oc + i] = static_cast<float>(nw[c * per_oc + i] * scale[c]);
      const double b = bias_id >= 0 ? g.t(bias_id).as<float>()[c] : 0.0;
      nb[c] = static_cast<float>(b * scale[c] + shift[c]);
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
  return batchnorm_to_affine(g);
}

}  // namespace systolic::passes
