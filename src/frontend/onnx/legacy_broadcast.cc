// Before opset 7, Add, Sub, Mul, Div, Pow, the comparisons and the logical ops broadcast only with
// `broadcast = 1`, and then B's dims line up with A's from `axis` on (by default A's trailing
// dims). Appending unit dims to B makes that the numpy rule every later opset uses, so nothing
// after the importer knows the legacy form existed.
// ONNX's parser.h names an enumerator MAP_TYPE, which <sys/mman.h> (through ir/graph.h) defines
// as a macro: ONNX's headers come first.
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include "frontend/onnx/legacy_broadcast.h"

namespace systolic::frontend {

std::unordered_map<std::string, int> legacy_broadcast_ranks(const onnx::ModelProto& model) {
  std::unordered_map<std::string, int> ranks;
  bool needed = false;
  for (const auto& np : model.graph().node()) {
    bool broadcast = false, axis = false;
    for (const auto& a : np.attribute()) {
      broadcast |= a.name() == "broadcast" && a.i() != 0;
      axis |= a.name() == "axis";
    }
    needed |= broadcast && axis && np.op_type() != "Gemm";
  }
  if (!needed) return ranks;
  onnx::ModelProto copy = model;
  try {
    onnx::shape_inference::InferShapes(copy);
  } catch (const std::exception&) {
    return ranks;  // the ranks stay unknown; a node that needs one says so
  }
  auto note = [&](const onnx::ValueInfoProto& vi) {
    if (vi.type().has_tensor_type() && vi.type().tensor_type().has_shape())
      ranks[vi.name()] = vi.type().tensor_type().shape().dim_size();
  };
  for (const auto& vi : copy.graph().value_info()) note(vi);
  for (const auto& vi : copy.graph().input()) note(vi);
  for (const auto& vi : copy.graph().output()) note(vi);
  return ranks;
}

Status unlegacy_broadcast(ir::Graph& g, ir::Node& n, const std::function<int(int)>& rank_of) {
  if (!n.has("broadcast")) return Status::Ok();
  const bool broadcast = n.i("broadcast", 0) != 0;
  n.attrs.erase("broadcast");
  if (n.op == ir::Op::Gemm || !broadcast) return Status::Ok();
  if (n.inputs.size() != 2) return Status::Error("node " + n.name + ": legacy broadcast needs two inputs");
  if (!n.has("axis")) return Status::Ok();  // A's trailing dims: the numpy rule already
  const int64_t axis = n.i("axis", 0);
  n.attrs.erase("axis");
  const int ra = rank_of(0), rb = rank_of(1);
  if (ra < 0 || rb < 0)
    return Status::Error("node " + n.name + ": legacy broadcast with axis " + std::to_string(axis) +
                         " needs the ranks of both inputs, which shape inference could not give");
  const int64_t start = axis < 0 ? axis + ra : axis;
  const int64_t trailing = ra - start - rb;
  if (start < 0 || trailing < 0)
    return Status::Error("node " + n.name + ": legacy broadcast axis " + std::to_string(axis) + " puts a rank-" +
                         std::to_string(rb) + " B outside a rank-" + std::to_string(ra) + " A");
  if (trailing == 0) return Status::Ok();
  const int b = n.inputs[1];
  const std::string b_name = g.t(b).name;  // adding tensors may move g's tensors
  if (g.t(b).is_const()) {
    const ir::Tensor& tb = g.t(b);
    ir::Shape shape = tb.shape;
    shape.resize(shape.size() + trailing, 1);
    const ir::DType dtype = tb.dtype;
    AlignedBytes bytes = *tb.data;
    n.inputs[1] = g.add_const(g.fresh_name(b_name + ".aligned"), dtype, shape, std::move(bytes));
    return Status::Ok();
  }
  std::vector<int64_t> axes;
  for (int64_t d = rb; d < rb + trailing; ++d) axes.push_back(d);
  ir::Node u;
  u.op = ir::Op::Unsqueeze;
  u.name = g.fresh_name(n.name + ".align");
  ir::Tensor t;
  t.name = g.fresh_name(b_name + ".aligned");
  const int out = g.add_tensor(std::move(t));
  u.inputs = {b, g.add_const_i64(g.fresh_name(u.name + ".axes"), {trailing}, axes)};
  u.outputs = {out};
  g.nodes.push_back(std::move(u));
  n.inputs[1] = out;
  return Status::Ok();
}

}  // namespace systolic::frontend
