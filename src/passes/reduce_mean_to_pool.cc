// ReduceMean over H and W of a 4-D float tensor is a global average pool (ShuffleNet ends with
// x.mean([2, 3]), which exporters write as ReduceMean): the pool runs on the NHWC pool kernels
// where the ReduceMean went plain through a reorder to the interpreter. keepdims 0 adds a
// Reshape to [N, C].
#include <algorithm>

#include "passes/pass.h"

namespace systolic::passes {
namespace {

// The axes of ReduceMean `n` (attribute, or a constant input from opset 18), or false.
bool reduce_axes(const ir::Graph& g, const ir::Node& n, std::vector<int64_t>* axes) {
  if (!n.i("axes_as_input", 0)) {
    *axes = n.ints("axes");
    return true;
  }
  if (n.in(1) < 0 || !g.t(n.in(1)).is_const() || g.t(n.in(1)).dtype != ir::DType::i64) return false;
  const ir::Tensor& t = g.t(n.in(1));
  axes->assign(t.as<int64_t>(), t.as<int64_t>() + t.numel());
  return true;
}

}  // namespace

Status reduce_mean_to_pool(ir::Graph& g, PassContext&) {
  std::vector<ir::Node> out;
  out.reserve(g.nodes.size());
  for (ir::Node& n : g.nodes) {
    std::vector<int64_t> axes;
    const bool candidate = n.op == ir::Op::ReduceMean && !n.inputs.empty() && n.outputs.size() == 1 &&
                           n.outputs[0] >= 0 && reduce_axes(g, n, &axes);
    const ir::Tensor* x = candidate ? &g.t(n.inputs[0]) : nullptr;
    if (!x || x->dtype != ir::DType::f32 || x->shape.size() != 4 || x->dynamic || axes.size() != 2) {
      out.push_back(std::move(n));
      continue;
    }
    for (int64_t& a : axes) a = a < 0 ? a + 4 : a;
    std::sort(axes.begin(), axes.end());
    if (axes != std::vector<int64_t>{2, 3}) {
      out.push_back(std::move(n));
      continue;
    }
    const int in = n.inputs[0], y = n.outputs[0];
    const int64_t batch = x->shape[0], c = x->shape[1];
    ir::Node pool;
    pool.op = ir::Op::GlobalAveragePool;
    pool.name = n.name;
    pool.inputs = {in};
    if (n.i("keepdims", 1) != 0) {
      pool.outputs = {y};
      out.push_back(std::move(pool));
      continue;
    }
    ir::Tensor pooled = g.t(y);
    pooled.name = g.fresh_name(g.t(y).name + ".pooled");
    pooled.shape = {batch, c, 1, 1};
    pooled.quant = {};
    pool.outputs = {g.add_tensor(std::move(pooled))};
    ir::Node reshape;
    reshape.op = ir::Op::Reshape;
    reshape.name = n.name + ".squeeze";
    reshape.inputs = {pool.outputs[0], g.add_const_i64(g.fresh_name(n.name + ".shape"), {2}, {-1, c})};
    reshape.outputs = {y};
    out.push_back(std::move(pool));
    out.push_back(std::move(reshape));
  }
  g.nodes = std::move(out);
  return Status::Ok();
}

}  // namespace systolic::passes
