// Constant folding: evaluates every node whose inputs are all constant (and Shape of a tensor
// whose shape is known) with the reference interpreter, so exporters' shape sub-graphs vanish.
#include "interp/eval.h"
#include "passes/pass.h"

namespace systolic::passes {
namespace {

constexpr std::size_t kMaxFoldBytes = std::size_t{256} << 20;

bool foldable(const ir::Graph& g, const ir::Node& n) {
  if (n.op == ir::Op::Shape) return true;  // only needs the input's shape
  bool any = false;
  for (int in : n.inputs) {
    if (in < 0) continue;
    if (!g.t(in).is_const()) return false;
    any = true;
  }
  return any || n.op == ir::Op::ConstantOfShape || n.op == ir::Op::Range;
}

}  // namespace

Status constant_folding(ir::Graph& g, PassContext& ctx) {
  std::vector<ir::Node> kept;
  for (ir::Node& n : g.nodes) {
    if (dynamic_node(g, n)) {  // shaped at run time (split_dynamic)
      mark_dynamic(g, n);
      kept.push_back(std::move(n));
      continue;
    }
    SYSTOLIC_RETURN_IF_ERROR(infer_node(g, n));
    // An int8 plan keeps a constant's DequantizeLinear for fold_qdq, which folds it into a
    // float constant that remembers the integers' scales.
    const bool keep_dq = ctx.precision == Precision::int8 && ctx.optimize && n.op == ir::Op::DequantizeLinear;
    if (keep_dq || !foldable(g, n)) {
      kept.push_back(std::move(n));
      continue;
    }
    bool is_output = false;
    std::size_t bytes = 0;
    for (int o : n.outputs)
      if (o >= 0) {
        is_output |= g.is_graph_output(o);
        bytes += g.t(o).bytes();
      }
    // A graph output must stay produced by a node; huge results are not worth storing.
    if (is_output || bytes > kMaxFoldBytes) {
      kept.push_back(std::move(n));
      continue;
    }
    std::vector<interp::TensorRef> ins, outs;
    for (int in : n.inputs) {
      if (in < 0) ins.push_back({});
      else ins.push_back({g.t(in).dtype, g.t(in).shape, g.t(in).data ? g.t(in).data->data() : nullptr});
    }
    std::vector<std::shared_ptr<AlignedBytes>> bufs;
    for (int o : n.outputs) {
      if (o < 0) {
        outs.push_back({});
        continue;
      }
      auto buf = std::make_shared<AlignedBytes>(g.t(o).bytes());
      outs.push_back({g.t(o).dtype, g.t(o).shape, buf->data()});
      bufs.push_back(buf);
    }
    Status st = interp::eval_node(n, ins, outs);
    if (!st.ok()) return Err("constant folding %s: %s", n.name.c_str(), st.message().c_str());
    std::size_t k = 0;
    for (int o : n.outputs)
      if (o >= 0) g.t(o).data = bufs[k++];
  }
  g.nodes = std::move(kept);
  return Status::Ok();
}

}  // namespace systolic::passes
