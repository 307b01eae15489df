// split_dynamic: moves the nodes whose shapes are known only at run time (detection
// post-processing: NonZero, NonMaxSuppression, a TopK whose K is computed, If, and everything
// downstream of them) into a graph of their own, the plan's dynamic tail. The rest stays one
// static plan (fused, laid out, packed, placed in the arena); the tail runs on the reference
// interpreter after it, with shapes inferred from the values of each run.
#include <algorithm>

#include "passes/pass.h"

namespace systolic::passes {
namespace {

// Whether input i's values (not only its shape) decide the shape of n's outputs.
bool value_shapes_output(const ir::Node& n, std::size_t i) {
  using ir::Op;
  switch (n.op) {
    case Op::Reshape: case Op::Expand: case Op::Tile: case Op::TopK: case Op::OneHot: case Op::Compress:
    case Op::Upsample: case Op::Squeeze: case Op::Unsqueeze: case Op::Split:
      return i == 1;
    case Op::Pad: return i == 1 || i == 3;
    case Op::Slice: case Op::Resize: return i >= 1;
    case Op::ConstantOfShape: case Op::NonZero: case Op::Unique: return i == 0;
    case Op::Range: case Op::NonMaxSuppression: return true;
    case Op::ReduceMean: case Op::ReduceMin: case Op::ReduceMax: case Op::ReduceSum: case Op::ReduceProd:
    case Op::ReduceL1: case Op::ReduceL2: case Op::ReduceLogSum: case Op::ReduceLogSumExp: case Op::ReduceSumSquare:
      return i == 1 && n.i("axes_as_input", 0) != 0;
    default: return false;
  }
}

}  // namespace

bool dynamic_node(const ir::Graph& g, const ir::Node& n) {
  if (n.op == ir::Op::If) return true;
  for (std::size_t i = 0; i < n.inputs.size(); ++i) {
    const int id = n.inputs[i];
    if (id < 0) continue;
    const ir::Tensor& t = g.t(id);
    if (t.dynamic || (!t.is_const() && value_shapes_output(n, i))) return true;
  }
  return false;
}

// The element type of a dynamic node's output i, known before any run (the shape is not):
// what a served model's metadata and a Python session's get_outputs() report.
ir::DType dynamic_dtype(const ir::Graph& g, const ir::Node& n, std::size_t i) {
  using ir::DType;
  using ir::Op;
  auto in = [&](std::size_t k) { return k < n.inputs.size() && n.inputs[k] >= 0 ? g.t(n.inputs[k]).dtype : DType::undefined; };
  switch (n.op) {
    case Op::NonZero: case Op::NonMaxSuppression: case Op::Shape: case Op::Size: case Op::ArgMax: case Op::ArgMin:
      return DType::i64;
    case Op::TopK: case Op::Unique: return i == 0 ? in(0) : DType::i64;
    case Op::Equal: case Op::Less: case Op::Greater: case Op::LessOrEqual: case Op::GreaterOrEqual: case Op::Not:
    case Op::And: case Op::Or: case Op::Xor: case Op::IsNaN: case Op::IsInf:
      return DType::boolean;
    case Op::Cast: return static_cast<DType>(n.i("to", 1));
    case Op::EyeLike: return n.has("dtype") ? static_cast<DType>(n.i("dtype", 1)) : in(0);
    case Op::CastLike: case Op::Where: return in(1);
    case Op::OneHot: return in(2);
    case Op::QuantizeLinear: return n.inputs.size() > 2 && in(2) != DType::undefined ? in(2) : DType::u8;
    case Op::DequantizeLinear: return DType::f32;
    case Op::DynamicQuantizeLinear: return i == 1 ? DType::f32 : DType::u8;
    case Op::ConvInteger: case Op::MatMulInteger: return DType::i32;
    case Op::QLinearConv: return in(7);
    case Op::QLinearMatMul: return in(7);
    case Op::ConstantOfShape: {
      auto it = n.attrs.find("value");
      return it != n.attrs.end() && it->second.tensor_v ? it->second.tensor_v->dtype : DType::f32;
    }
    case Op::If: {
      auto it = n.attrs.find("then_branch");
      if (it == n.attrs.end() || !it->second.graph_v || i >= it->second.graph_v->outputs.size()) return DType::undefined;
      const ir::Graph& b = *it->second.graph_v;
      return b.t(b.outputs[i]).dtype;
    }
    default:  // element-wise and data-movement ops keep their data's type
      for (std::size_t k = 0; k < n.inputs.size(); ++k)
        if (in(k) != DType::undefined) return in(k);
      return DType::undefined;
  }
}

void mark_dynamic(ir::Graph& g, const ir::Node& n) {
  for (std::size_t i = 0; i < n.outputs.size(); ++i) {
    const int o = n.outputs[i];
    if (o < 0) continue;
    ir::Tensor& t = g.t(o);
    t.dynamic = true;
    t.shape_known = false;
    if (t.dtype == ir::DType::undefined) t.dtype = dynamic_dtype(g, n, i);
  }
}

Status split_dynamic(ir::Graph& g, PassContext& ctx) {
  const std::vector<int> producer = g.producers();
  std::vector<char> dyn(g.nodes.size(), 0);
  bool any = false;
  for (std::size_t k = 0; k < g.nodes.size(); ++k)
    for (int o : g.nodes[k].outputs)
      if (o >= 0 && g.t(o).dynamic) dyn[k] = 1, any = true;
  if (!any) return Status::Ok();

  auto tail = std::make_shared<ir::Graph>();
  tail->opset = g.opset;
  std::vector<int> in_tail(g.tensors.size(), -1);  // static id -> tail id
  std::vector<int> boundary;                       // static tensors the tail reads
  auto is_dynamic_product = [&](int id) { return producer[id] >= 0 && dyn[producer[id]]; };
  auto map = [&](int id) {
    if (id < 0) return -1;
    if (in_tail[id] >= 0) return in_tail[id];
    ir::Tensor t = g.t(id);  // a constant shares its bytes
    t.arena_offset = -1;
    in_tail[id] = tail->add_tensor(std::move(t));
    if (!g.t(id).is_const() && !is_dynamic_product(id)) {
      tail->inputs.push_back(in_tail[id]);
      boundary.push_back(id);
    }
    return in_tail[id];
  };
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    if (!dyn[k]) continue;
    ir::Node n = g.nodes[k];
    for (int& id : n.inputs) id = map(id);
    for (int& id : n.outputs) id = map(id);
    tail->nodes.push_back(std::move(n));
  }
  for (int o : g.outputs) tail->outputs.push_back(map(o));

  // The static plan computes what the tail reads (model inputs the tail reads come from the caller).
  std::vector<int> outs;
  for (int id : boundary)
    if (!std::count(g.inputs.begin(), g.inputs.end(), id)) outs.push_back(id);
  g.remove_nodes(dyn);
  g.outputs = std::move(outs);
  SYSTOLIC_RETURN_IF_ERROR(ir::verify(*tail));
  ctx.tail = std::move(tail);
  return Status::Ok();
}

}  // namespace systolic::passes
