// Small helpers the pattern-matching passes (fuse_gelu, fuse_layernorm, layout_assignment,
// dead_code_elimination, fold_pad) and the runtime's step preparation share.
#pragma once
#include <vector>

#include "ir/graph.h"

namespace systolic::passes {

// The value of a one-element float constant, if `id` is one.
inline bool scalar_const(const ir::Graph& g, int id, float* v) {
  if (id < 0) return false;
  const ir::Tensor& t = g.t(id);
  if (!t.is_const() || t.dtype != ir::DType::f32 || t.numel() != 1) return false;
  *v = t.as<float>()[0];
  return true;
}

// The value of a one-element int64 or int32 constant, if `id` is one (Slice bounds and axes).
inline bool int_scalar_const(const ir::Graph& g, int id, int64_t* v) {
  if (id < 0) return false;
  const ir::Tensor& t = g.t(id);
  if (!t.is_const() || t.numel() != 1) return false;
  if (t.dtype == ir::DType::i64) *v = t.as<int64_t>()[0];
  else if (t.dtype == ir::DType::i32) *v = t.as<int32_t>()[0];
  else return false;
  return true;
}

// A Pad node's amounts (its constant int64 input, or the pads attribute of older opsets) that
// keeps its input's quantization, if both hold.
inline bool pad_amounts(const ir::Graph& g, const ir::Node& n, std::vector<int64_t>* pads) {
  if (n.op != ir::Op::Pad || n.inputs.empty() || n.inputs[0] < 0 || n.outputs.empty() || n.outputs[0] < 0) return false;
  const ir::Tensor& x = g.t(n.inputs[0]);
  const ir::Tensor& y = g.t(n.outputs[0]);
  if (!(y.quant.empty() || (y.quant.scale == x.quant.scale && y.quant.zero_point == x.quant.zero_point))) return false;
  *pads = n.ints("pads");
  if (n.in(1) >= 0) {
    const ir::Tensor& p = g.t(n.in(1));
    if (!p.is_const() || p.dtype != ir::DType::i64) return false;
    pads->assign(p.as<int64_t>(), p.as<int64_t>() + p.numel());
  }
  return !pads->empty();
}

// The operand of binary `n` that is not `id`, or -1 when `id` is not an operand.
inline int other_operand(const ir::Node& n, int id) {
  if (n.inputs.size() != 2) return -1;
  return n.inputs[0] == id ? n.inputs[1] : n.inputs[1] == id ? n.inputs[0] : -1;
}

// The node consuming tensor `t` when it is `t`'s only consumer, of op `op`, and `t` is no
// graph output; else -1.
inline int only_consumer(const ir::Graph& g, const std::vector<std::vector<int>>& consumers, int t, ir::Op op) {
  if (t < 0 || consumers[t].size() != 1 || g.is_graph_output(t)) return -1;
  const int c = consumers[t][0];
  return g.nodes[c].op == op ? c : -1;
}

}  // namespace systolic::passes
