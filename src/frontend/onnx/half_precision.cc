// float16 / bfloat16 models on float32 arithmetic (half_precision.h). ONNX Runtime's CPU
// provider does the same for most ops (it inserts casts around the ones without half kernels);
// here every op runs its float32 kernels, so a half model gets the fused, packed plan an fp32
// export would, and half values exist only at the graph's edges and between a Cast's two steps.
#include "frontend/onnx/half_precision.h"

#include <vector>

#include "ir/half.h"

namespace systolic::frontend {

namespace {

using ir::DType;
using ir::Op;

ir::Node cast_node(ir::Graph& g, int from, int to, DType dt) {
  ir::Node n;
  n.op = Op::Cast;
  n.name = g.fresh_name(g.t(to).name + ".cast");
  n.inputs = {from};
  n.outputs = {to};
  n.set_i("to", static_cast<int64_t>(dt));
  return n;
}

// A new float32 tensor named after `of`.
int f32_twin(ir::Graph& g, int of) {
  ir::Tensor t;
  t.name = g.fresh_name(g.t(of).name + ".f32");
  t.dtype = DType::f32;
  return g.add_tensor(std::move(t));
}

}  // namespace

Status compute_half_in_f32(ir::Graph& g, const std::map<int, DType>& half_outputs,
                           const std::map<int, DType>& half_consts) {
  // half[t]: the half type tensor t holds (graph inputs, Cast and CastLike results).
  std::vector<DType> half(g.tensors.size(), DType::undefined);
  for (int in : g.inputs)
    if (ir::is_half(g.t(in).dtype)) half[in] = g.t(in).dtype;
  bool any = false;
  for (DType d : half) any |= d != DType::undefined;
  for (const ir::Node& n : g.nodes) any |= n.op == Op::Cast && ir::is_half(static_cast<DType>(n.i("to", 1)));
  if (!any && half_outputs.empty() && half_consts.empty()) return Status::Ok();

  // Readers of a half tensor read its float32 twin instead (the graph's outputs keep it);
  // widened[w]: the half type twin w was widened from (and the half constants' own).
  std::vector<int> twin(g.tensors.size(), -1);
  std::map<int, DType> widened = half_consts;
  std::vector<ir::Node> out;
  auto widen = [&](int t) {
    const int w = f32_twin(g, t);
    twin.resize(g.tensors.size(), -1);
    twin[t] = w;
    widened[w] = half[t];
    out.push_back(cast_node(g, t, w, DType::f32));
  };
  for (int in : g.inputs)
    if (half[in] != DType::undefined) widen(in);
  for (ir::Node& n : g.nodes) {
    for (int& in : n.inputs)
      if (in >= 0 && in < static_cast<int>(twin.size()) && twin[in] >= 0) in = twin[in];
    // CastLike to a half type: a Cast to it (its like input, a widened half input, Cast result
    // or constant, reads as float32 now).
    if (n.op == Op::CastLike && n.inputs.size() == 2) {
      const auto like = widened.find(n.inputs[1]);
      if (like != widened.end()) {
        const DType dt = like->second;
        n.op = Op::Cast;
        n.inputs.resize(1);
        n.attrs.clear();
        n.set_i("to", static_cast<int64_t>(dt));
      }
    }
    const bool to_half = n.op == Op::Cast && ir::is_half(static_cast<DType>(n.i("to", 1)));
    const int y = n.outputs.empty() ? -1 : n.outputs[0];
    out.push_back(std::move(n));
    if (to_half && y >= 0) {
      half.resize(g.tensors.size(), DType::undefined);
      half[y] = static_cast<DType>(out.back().i("to", 1));
      g.t(y).dtype = half[y];
      widen(y);
    }
  }
  // Outputs declared half but computed in float32: the producer writes a float32 twin, and a
  // Cast rounds it to the declared type.
  for (const auto& [y, dt] : half_outputs) {
    if (y < static_cast<int>(half.size()) && half[y] != DType::undefined) continue;  // half already
    ir::Node* producer = nullptr;
    for (ir::Node& n : out)
      for (int& o : n.outputs)
        if (o == y) producer = &n;
    if (!producer) continue;  // an input or a constant: left in its own type
    const int w = f32_twin(g, y);
    for (int& o : producer->outputs)
      if (o == y) o = w;
    for (ir::Node& n : out)
      for (int& in : n.inputs)
        if (in == y) in = w;
    g.t(y).dtype = dt;
    out.push_back(cast_node(g, w, y, dt));
  }
  g.nodes = std::move(out);
  return ir::verify(g);
}

}  // namespace systolic::frontend
