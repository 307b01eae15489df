// QDQ import (int8 plans): QuantizeLinear -> DequantizeLinear pairs on activations become the
// quantization annotation of the float tensor they wrap, and DequantizeLinear of a constant
// becomes a float constant that remembers its integers' scales. What is left is the float
// graph, annotated; the later passes fuse it as any float model, and lower_int8 turns the
// annotated parts into integer kernels. int8 activations are canonicalised to uint8 (x xor
// 0x80, zero point + 128: the same real values), so one kernel form serves every model.
// fp32 and bf16 plans keep the Q/DQ nodes and run them (fake quantization).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "interp/eval.h"
#include "passes/pass.h"

namespace systolic::passes {
namespace {

using ir::DType;
using ir::Op;

// The (scale, zero point, axis) of a Q or DQ node whose parameters are constant, or false;
// *bad_scale names a scale the int8 kernels cannot use (zero, negative, not finite).
bool read_params(const ir::Graph& g, const ir::Node& n, DType qtype, ir::QuantParams* q, std::string* bad_scale) {
  const int s = n.in(1), z = n.in(2);
  if (s < 0 || !g.t(s).is_const() || g.t(s).dtype != DType::f32) return false;
  if (z >= 0 && !g.t(z).is_const()) return false;
  const ir::Tensor& st = g.t(s);
  const int64_t count = st.numel();
  if (count < 1 || (z >= 0 && g.t(z).numel() != count)) return false;
  q->scale.assign(st.as<float>(), st.as<float>() + count);
  q->zero_point.assign(count, 0);
  if (z >= 0) {
    const ir::Tensor& zt = g.t(z);
    for (int64_t i = 0; i < count; ++i) {
      switch (zt.dtype) {
        case DType::u8: q->zero_point[i] = zt.as<uint8_t>()[i]; break;
        case DType::i8: q->zero_point[i] = zt.as<int8_t>()[i]; break;
        case DType::i32: q->zero_point[i] = zt.as<int32_t>()[i]; break;
        default: return false;
      }
    }
  }
  for (float v : q->scale)
    if (!(v > 0.f) || !std::isfinite(v)) {  // the kernels need a positive finite scale
      char buf[64];
      std::snprintf(buf, sizeof buf, "%g", v);
      *bad_scale = ir::op_name(n.op) + std::string(" ") + n.name + ": scale " + buf;
      return false;
    }
  q->axis = count > 1 ? static_cast<int>(n.i("axis", 1)) : -1;
  q->qtype = qtype;
  return true;
}

bool same(const ir::QuantParams& a, const ir::QuantParams& b) {
  return a.scale == b.scale && a.zero_point == b.zero_point && a.axis == b.axis;
}

// uint8 form of per-tensor int8 activation parameters (lossless).
ir::QuantParams as_u8(ir::QuantParams q) {
  if (q.qtype == DType::i8)
    for (int32_t& z : q.zero_point) z += 128;
  q.qtype = DType::u8;
  return q;
}

// (x - zp) * scale of a constant integer tensor, per axis.
std::vector<float> dequantize(const ir::Tensor& x, const ir::QuantParams& q) {
  const int64_t n = x.numel();
  std::vector<float> out(static_cast<std::size_t>(n));
  int64_t inner = 1, dim = 1;
  if (q.axis >= 0 && q.scale.size() > 1) {
    const int axis = q.axis < 0 ? q.axis + static_cast<int>(x.shape.size()) : q.axis;
    dim = x.shape[axis];
    for (std::size_t d = axis + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
  }
  for (int64_t i = 0; i < n; ++i) {
    const std::size_t c = q.scale.size() > 1 ? static_cast<std::size_t>((i / inner) % dim) : 0;
    double v = 0;
    switch (x.dtype) {
      case DType::u8: v = x.as<uint8_t>()[i]; break;
      case DType::i8: v = x.as<int8_t>()[i]; break;
      case DType::i32: v = x.as<int32_t>()[i]; break;
      default: break;
    }
    out[i] = static_cast<float>(v - q.zero_point[c]) * q.scale[c];
  }
  return out;
}

}  // namespace

Status fold_qdq(ir::Graph& g, PassContext& ctx) {
  if (ctx.precision != Precision::int8 || !ctx.optimize) return Status::Ok();
  std::vector<int> alias(g.tensors.size());
  for (std::size_t i = 0; i < alias.size(); ++i) alias[i] = static_cast<int>(i);
  std::vector<char> drop(g.nodes.size(), 0);
  // Casts to the type a tensor already has (PyTorch writes Q -> Cast(uint8) -> DQ) are no-ops.
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    ir::Node& n = g.nodes[k];
    for (int& in : n.inputs)
      if (in >= 0) in = alias[in];
    if (n.op == Op::Cast && n.outputs.size() == 1 && !g.is_graph_output(n.outputs[0]) &&
        g.t(n.inputs[0]).dtype == g.t(n.outputs[0]).dtype) {
      alias[n.outputs[0]] = n.inputs[0];
      drop[k] = 1;
    }
  }
  for (int& o : g.outputs) o = alias[o];
  g.remove_nodes(drop);
  drop.assign(g.nodes.size(), 0);
  auto producers = g.producers();
  int folded = 0;
  std::string bad_scale;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const ir::Node& n = g.nodes[k];
    if (n.op != Op::DequantizeLinear || n.outputs.size() != 1 || g.is_graph_output(n.outputs[0])) continue;
    const int x = n.inputs[0];
    const DType xt = g.t(x).dtype;
    if (xt != DType::u8 && xt != DType::i8 && xt != DType::i32) continue;
    ir::QuantParams q;
    if (!read_params(g, n, xt, &q, &bad_scale)) continue;
    const int y = n.outputs[0];
    if (g.t(x).is_const()) {  // weights or bias: a float constant that keeps its integers' scales
      if (q.axis < -static_cast<int>(g.t(x).shape.size()) || q.axis >= static_cast<int>(g.t(x).shape.size()))
        return Err("DequantizeLinear %s: axis %d out of range", n.name.c_str(), q.axis);
      if (q.axis < 0 && q.scale.size() > 1) q.axis += static_cast<int>(g.t(x).shape.size());
      const int c = g.add_const_f32(g.fresh_name(g.t(y).name), g.t(x).shape, dequantize(g.t(x), q));
      g.t(c).shape_known = true;
      g.t(c).quant = q;
      alias.push_back(c);
      alias[y] = c;
      drop[k] = 1;
      ++folded;
      continue;
    }
    if (!q.per_tensor() || xt == DType::i32) continue;
    const int p = producers[x];
    if (p >= 0 && g.nodes[p].op == Op::QuantizeLinear) {  // Q -> DQ: the float tensor, annotated
      const ir::Node& qn = g.nodes[p];
      ir::QuantParams qq;
      if (!read_params(g, qn, xt, &qq, &bad_scale) || !same(q, qq)) continue;
      const int f = qn.inputs[0];
      if (g.t(f).dtype != DType::f32) continue;
      const ir::QuantParams u = as_u8(q);
      if (!g.t(f).quant.empty() && !same(g.t(f).quant, u)) continue;  // quantized two ways: keep the nodes
      g.t(f).quant = u;
      alias[y] = f;
      drop[k] = 1;
      ++folded;
      ctx.qdq_model = true;
      continue;
    }
    // DQ of an integer tensor computed at run time (a model input, say): kept as a node, its
    // output annotated so an int8 consumer can read the integers directly.
    g.t(y).quant = as_u8(q);
  }
  for (ir::Node& n : g.nodes)
    for (int& in : n.inputs)
      if (in >= 0) in = alias[in];
  g.remove_nodes(drop);
  if (folded) ctx.log += "fold_qdq: " + std::to_string(folded) + " DequantizeLinear folded into annotations\n";
  // A model that says how to quantize, in a way no int8 kernel can follow: say where.
  if (!bad_scale.empty())
    return Err("%s is not a positive finite number: int8 needs positive scales (run it with --precision fp32)",
               bad_scale.c_str());
  return Status::Ok();
}

}  // namespace systolic::passes
