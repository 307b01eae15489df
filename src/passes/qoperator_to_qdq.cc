// QOperator import (int8 plans): QLinearConv and QLinearMatMul whose weights and parameters are
// constant become their QDQ form: DequantizeLinear on the input and the weights (and on the
// int32 bias, in the scale x_scale * w_scale), the float Conv or MatMul, QuantizeLinear on the
// output. fold_qdq then turns the pairs into annotations as for any QDQ model, so models in
// either form reach the same int8 kernels. Other forms stay ops the interpreter runs.
#include <cstring>

#include "passes/pass.h"

namespace systolic::passes {
namespace {

using ir::DType;
using ir::Op;

bool is_const(const ir::Graph& g, int id) { return id >= 0 && g.t(id).is_const(); }

int float_tensor(ir::Graph& g, const std::string& name) {
  ir::Tensor t;
  t.name = g.fresh_name(name);
  t.dtype = DType::f32;
  return g.add_tensor(std::move(t));
}

ir::Node qdq_node(Op op, const std::string& name, std::vector<int> inputs, int output) {
  ir::Node n;
  n.op = op;
  n.name = name;
  n.inputs = std::move(inputs);
  n.outputs = {output};
  return n;
}

// The float scales of `scale` (a constant), or empty when it is not float.
std::vector<float> floats(const ir::Graph& g, int id) {
  const ir::Tensor& t = g.t(id);
  if (t.dtype != DType::f32) return {};
  return std::vector<float>(t.as<float>(), t.as<float>() + t.numel());
}

// QLinearConv: x 0, x_scale 1, x_zp 2, w 3, w_scale 4, w_zp 5, y_scale 6, y_zp 7, B 8.
bool rewrite_conv(ir::Graph& g, const ir::Node& n, std::vector<ir::Node>* out) {
  for (int i : {1, 2, 3, 4, 5, 6, 7})
    if (!is_const(g, n.in(i))) return false;
  const int b = n.in(8);
  if (b >= 0 && (!is_const(g, b) || g.t(b).dtype != DType::i32)) return false;
  const std::vector<float> xs = floats(g, n.in(1)), ws = floats(g, n.in(4));
  const ir::Tensor& w = g.t(n.in(3));
  if (xs.size() != 1 || ws.empty() || w.shape.size() < 3) return false;
  const int64_t oc = w.shape[0];
  if (ws.size() != 1 && static_cast<int64_t>(ws.size()) != oc) return false;
  const int xf = float_tensor(g, n.name + ".x"), wf = float_tensor(g, n.name + ".w"), yf = float_tensor(g, n.name + ".y");
  out->push_back(qdq_node(Op::DequantizeLinear, n.name + ".dequantize_x", {n.inputs[0], n.in(1), n.in(2)}, xf));
  ir::Node dw = qdq_node(Op::DequantizeLinear, n.name + ".dequantize_w", {n.in(3), n.in(4), n.in(5)}, wf);
  if (ws.size() > 1) dw.set_i("axis", 0);
  out->push_back(std::move(dw));
  ir::Node conv;
  conv.op = Op::Conv;
  conv.name = n.name;
  conv.attrs = n.attrs;
  conv.inputs = {xf, wf};
  if (b >= 0) {
    std::vector<float> bs(oc);
    for (int64_t k = 0; k < oc; ++k) bs[k] = xs[0] * ws[ws.size() > 1 ? k : 0];
    AlignedBytes zeros(oc * 4, 0);
    const int scale = g.add_const_f32(g.fresh_name(n.name + ".bias_scale"), {oc}, bs);
    const int zp = g.add_const(g.fresh_name(n.name + ".bias_zero_point"), DType::i32, {oc}, std::move(zeros));
    const int bf = float_tensor(g, n.name + ".bias");
    ir::Node db = qdq_node(Op::DequantizeLinear, n.name + ".dequantize_bias", {b, scale, zp}, bf);
    db.set_i("axis", 0);
    out->push_back(std::move(db));
    conv.inputs.push_back(bf);
  }
  conv.outputs = {yf};
  out->push_back(std::move(conv));
  out->push_back(qdq_node(Op::QuantizeLinear, n.name + ".quantize_y", {yf, n.in(6), n.in(7)}, n.outputs[0]));
  return true;
}

// QLinearMatMul: a 0, a_scale 1, a_zp 2, b 3, b_scale 4, b_zp 5, y_scale 6, y_zp 7 (a per tensor).
bool rewrite_matmul(ir::Graph& g, const ir::Node& n, std::vector<ir::Node>* out) {
  for (int i : {1, 2, 3, 4, 5, 6, 7})
    if (!is_const(g, n.in(i))) return false;
  const ir::Tensor& bt = g.t(n.in(3));
  const std::vector<float> bs = floats(g, n.in(4));
  if (floats(g, n.in(1)).size() != 1 || bt.shape.size() != 2 || bs.empty() ||
      (bs.size() != 1 && static_cast<int64_t>(bs.size()) != bt.shape[1]) || g.t(n.in(4)).shape.size() > 1)
    return false;
  const int af = float_tensor(g, n.name + ".a"), bf = float_tensor(g, n.name + ".b"), yf = float_tensor(g, n.name + ".y");
  out->push_back(qdq_node(Op::DequantizeLinear, n.name + ".dequantize_a", {n.inputs[0], n.in(1), n.in(2)}, af));
  ir::Node db = qdq_node(Op::DequantizeLinear, n.name + ".dequantize_b", {n.in(3), n.in(4), n.in(5)}, bf);
  if (bs.size() > 1) db.set_i("axis", 1);
  out->push_back(std::move(db));
  ir::Node mm;
  mm.op = Op::MatMul;
  mm.name = n.name;
  mm.inputs = {af, bf};
  mm.outputs = {yf};
  out->push_back(std::move(mm));
  out->push_back(qdq_node(Op::QuantizeLinear, n.name + ".quantize_y", {yf, n.in(6), n.in(7)}, n.outputs[0]));
  return true;
}

}  // namespace

Status qoperator_to_qdq(ir::Graph& g, PassContext& ctx) {
  if (ctx.precision != Precision::int8 || !ctx.optimize) return Status::Ok();
  std::vector<ir::Node> out;
  int rewritten = 0;
  for (ir::Node& n : g.nodes) {
    const bool done = (n.op == Op::QLinearConv && rewrite_conv(g, n, &out)) ||
                      (n.op == Op::QLinearMatMul && rewrite_matmul(g, n, &out));
    if (done) ++rewritten;
    else out.push_back(std::move(n));
  }
  g.nodes = std::move(out);
  if (rewritten) ctx.log += "qoperator_to_qdq: " + std::to_string(rewritten) + " QLinear ops in QDQ form\n";
  return Status::Ok();
}

}  // namespace systolic::passes
