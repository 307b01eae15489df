// Epilogue fusion: a residual Add and then an activation that follow a Conv are folded into
// the Conv (input 3 = residual; attrs act, act_a, act_b), so the matrix kernel applies them
// in registers: y = act(conv(x) + bias + residual). One pattern table, no per-pattern classes.
#include <limits>

#include "kernels/epilogue.h"
#include "passes/pass.h"

namespace systolic::passes {
using kernels::Act;

bool as_activation(const ir::Graph& g, const ir::Node& n, Act* act, float* a, float* b) {
  *a = 0.f;
  *b = 0.f;
  switch (n.op) {
    case ir::Op::Relu: *act = Act::relu; return true;
    case ir::Op::Sigmoid: *act = Act::sigmoid; return true;
    case ir::Op::Tanh: *act = Act::tanh; return true;
    case ir::Op::Gelu:
      if (n.s("approximate", "none") != "none" && n.s("approximate", "none") != "tanh") return false;
      *act = Act::gelu;
      *a = n.s("approximate", "none") == "tanh" ? 1.f : 0.f;
      return true;
    case ir::Op::HardSwish: *act = Act::hard_swish; return true;
    case ir::Op::Silu: *act = Act::silu; return true;
    case ir::Op::LeakyRelu: *act = Act::leaky_relu; *a = n.f("alpha", 0.01f); return true;
    case ir::Op::HardSigmoid:
      *act = Act::hard_sigmoid;
      *a = n.f("alpha", 0.2f);
      *b = n.f("beta", 0.5f);
      return true;
    case ir::Op::Clip: {
      *act = Act::clip;
      *a = -std::numeric_limits<float>::infinity();
      *b = std::numeric_limits<float>::infinity();
      for (int i = 1; i <= 2; ++i) {
        const int id = n.in(i);
        if (id < 0) continue;
        const ir::Tensor& t = g.t(id);
        if (!t.is_const() || t.dtype != ir::DType::f32 || t.numel() != 1) return false;
        (i == 1 ? *a : *b) = t.as<float>()[0];
      }
      return true;
    }
    default: return false;
  }
}

namespace {

// A fused-away tensor that a QDQ model quantizes: its (scale, zero point) on the conv, so the
// int8 kernel rounds there as the model specifies (lower_int8).
void record_rounding(ir::Graph& g, ir::Node& conv, const char* attr, int t) {
  const ir::QuantParams& q = g.t(t).quant;
  if (!q.per_tensor()) return;
  ir::Attr a;
  a.kind = ir::Attr::floats;
  a.floats_v = {q.scale[0], static_cast<float>(q.zero_point[0])};
  conv.attrs[attr] = a;
}

}  // namespace

Status fuse_epilogue(ir::Graph& g, PassContext& ctx) {
  bool changed = true;
  while (changed) {
    changed = false;
    auto consumers = g.consumers();
    auto producers = g.producers();
    for (std::size_t k = 0; k < g.nodes.size() && !changed; ++k) {
      ir::Node& n = g.nodes[k];
      if (n.inputs.empty() || n.inputs[0] < 0) continue;
      if (n.op == ir::Op::Add && n.inputs.size() == 2 && ctx.fuse_residual) {
        // Fuse into the operand's producing conv that comes last, so the other is ready.
        int best = -1, other = -1;
        for (int side = 0; side < 2; ++side) {
          const int t = n.inputs[side], p = producers[t];
          if (p < 0 || g.nodes[p].op != ir::Op::Conv || g.nodes[p].has("act") || g.nodes[p].in(3) >= 0) continue;
          if (consumers[t].size() != 1 || g.is_graph_output(t)) continue;
          if (g.t(n.inputs[1 - side]).shape != g.t(t).shape || g.t(t).shape.size() != 4) continue;
          if (p > best) {
            best = p;
            other = n.inputs[1 - side];
          }
        }
        const int op = other >= 0 ? producers[other] : -1;
        if (best < 0 || op > best) continue;
        ir::Node& conv = g.nodes[best];
        record_rounding(g, conv, "qdq_mid1", conv.outputs[0]);
        conv.inputs.resize(4, -1);
        conv.inputs[3] = other;
        conv.outputs[0] = n.outputs[0];
        g.nodes.erase(g.nodes.begin() + k);
        changed = true;
        continue;
      }
      Act act;
      float a, b;
      if (!as_activation(g, n, &act, &a, &b)) continue;
      // An int8 conv's float output would apply SiLU after its stores, per vector with the scalar
      // exp (EfficientNet-B0 int8 at batch 16: 144 ms against 37 with the separate step).
      if (act == Act::silu && ctx.precision == Precision::int8) continue;
      const int t = n.inputs[0], p = producers[t];
      // Between two uint8 grids a float-only activation is a table (int8_tables): a calibrated
      // int8 plan keeps it apart where the conv's own output was measured, and so does the
      // calibration plan, which measures it.
      const bool clamp = act == Act::relu || act == Act::clip;
      if (!clamp && (!ctx.fuse_residual || (ctx.precision == Precision::int8 && ctx.activation_quant &&
                                            ctx.activation_quant->count(g.t(t).name))))
        continue;
      if (p < 0 || g.nodes[p].op != ir::Op::Conv || g.nodes[p].has("act")) continue;
      if (consumers[t].size() != 1 || g.is_graph_output(t)) continue;
      ir::Node& conv = g.nodes[p];
      conv.set_i("act", static_cast<int64_t>(act));
      conv.set_f("act_a", a);
      conv.set_f("act_b", b);
      // A clamp keeps the quantization of what it clamps when its own is not given; a QDQ model
      // that quantizes both keeps a rounding before the activation.
      if ((act == Act::relu || act == Act::clip) && g.t(n.outputs[0]).quant.empty()) g.t(n.outputs[0]).quant = g.t(t).quant;
      else record_rounding(g, conv, "qdq_mid2", t);
      conv.outputs[0] = n.outputs[0];
      g.nodes.erase(g.nodes.begin() + k);
      changed = true;
    }
  }
  return Status::Ok();
}

}  // namespace systolic::passes
