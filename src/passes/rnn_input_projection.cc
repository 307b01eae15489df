// A recurrent layer's input projection, X W^T + Wb for every step at once, is a MatMul with
// constant weights: it becomes one here (its bias an Add), so gemm_to_conv puts it on the packed
// matrix kernels, and the RNN/GRU/LSTM node (attribute projected = 1) reads the projections
// and runs only the recurrence. In a CRNN's first BiLSTM (256 inputs, 96 hidden) the projection
// is three quarters of the layer's multiplies.
#include "passes/pass.h"

namespace systolic::passes {

Status rnn_input_projection(ir::Graph& g, PassContext&) {
  std::vector<ir::Node> out;
  out.reserve(g.nodes.size());
  for (ir::Node& n : g.nodes) {
    const bool rnn = n.op == ir::Op::RNN || n.op == ir::Op::GRU || n.op == ir::Op::LSTM;
    if (!rnn || n.i("projected", 0) || n.inputs.size() < 3 || n.inputs[0] < 0 || n.inputs[1] < 0) {
      out.push_back(std::move(n));
      continue;
    }
    const ir::Tensor &x = g.t(n.inputs[0]), &w = g.t(n.inputs[1]);
    const int b = n.in(3);
    const bool bias_ok = b < 0 || (g.t(b).is_const() && g.t(b).dtype == ir::DType::f32);
    if (x.dtype != ir::DType::f32 || x.dynamic || x.shape.size() != 3 || !w.is_const() || w.dtype != ir::DType::f32 ||
        w.shape.size() != 3 || x.shape[2] != w.shape[2] || !bias_ok) {
      out.push_back(std::move(n));
      continue;
    }
    // Wt [I, D*G*H]: column d*G*H + j is direction d's row j of W; bias likewise from B's Wb halves.
    const int64_t D = w.shape[0], GH = w.shape[1], I = w.shape[2];
    std::vector<float> wt(I * D * GH), bias(D * GH);
    const float* W = w.as<float>();
    for (int64_t d = 0; d < D; ++d)
      for (int64_t j = 0; j < GH; ++j) {
        for (int64_t k = 0; k < I; ++k) wt[k * D * GH + d * GH + j] = W[(d * GH + j) * I + k];
        bias[d * GH + j] = b >= 0 ? g.t(b).as<float>()[d * 2 * GH + j] : 0.f;
      }
    ir::Tensor p = x;
    p.name = g.fresh_name(n.name + ".projected");
    p.shape[2] = D * GH;
    p.data = nullptr;
    p.quant = {};
    const int mm_out = g.add_tensor(p);
    ir::Node mm;
    mm.op = ir::Op::MatMul;
    mm.name = n.name + ".input_projection";
    mm.inputs = {n.inputs[0], g.add_const_f32(g.fresh_name(n.name + ".wt"), {I, D * GH}, wt)};
    mm.outputs = {mm_out};
    out.push_back(std::move(mm));
    int projected = mm_out;
    if (b >= 0) {
      p.name = g.fresh_name(n.name + ".projected_bias");
      projected = g.add_tensor(p);
      ir::Node add;
      add.op = ir::Op::Add;
      add.name = n.name + ".input_bias";
      add.inputs = {mm_out, g.add_const_f32(g.fresh_name(n.name + ".wb"), {D * GH}, bias)};
      add.outputs = {projected};
      out.push_back(std::move(add));
    }
    n.inputs[0] = projected;
    n.set_i("projected", 1);
    out.push_back(std::move(n));
  }
  g.nodes = std::move(out);
  return Status::Ok();
}

}  // namespace systolic::passes
