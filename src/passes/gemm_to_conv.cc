// Gemm / MatMul with constant weights become a 1x1 convolution over an [M,K,1,1] view, so
// fully-connected layers use the same pre-packed matrix kernels (and epilogues) as convs. A
// MatMul's leading dims ([B, T, K] x [K, N], as transformers' linear layers) fold into M, and
// the Add of a constant [N] that exporters write after it becomes the conv's bias.
#include <algorithm>

#include "passes/pass.h"

namespace systolic::passes {

Status gemm_to_conv(ir::Graph& g, PassContext&) {
  std::vector<ir::Node> out;
  const auto consumers = g.consumers();
  std::vector<char> absorbed(g.nodes.size(), 0);  // bias Adds folded into a MatMul's conv
  for (std::size_t idx = 0; idx < g.nodes.size(); ++idx) {
    if (absorbed[idx]) continue;
    ir::Node& n = g.nodes[idx];
    const bool gemm = n.op == ir::Op::Gemm, matmul = n.op == ir::Op::MatMul;
    if (!gemm && !matmul) {
      out.push_back(std::move(n));
      continue;
    }
    const ir::Tensor& a = g.t(n.inputs[0]);
    const ir::Tensor& b = g.t(n.inputs[1]);
    const int c_id = gemm ? n.in(2) : -1;
    bool ok = a.dtype == ir::DType::f32 && b.is_const() && b.dtype == ir::DType::f32 &&
              (a.shape.size() == 2 || (matmul && a.shape.size() > 2)) && b.shape.size() == 2;
    if (gemm) ok &= n.i("transA", 0) == 0 && n.f("alpha", 1.f) == 1.f;
    const bool trans_b = gemm && n.i("transB", 0);
    const int64_t K = ok ? a.shape.back() : 0;
    const int64_t M = ok ? ir::num_elements(a.shape) / std::max<int64_t>(K, 1) : 0;
    ok &= K > 0 && M > 0;
    const int64_t N = ok ? (trans_b ? b.shape[0] : b.shape[1]) : 0;
    if (ok && c_id >= 0) {
      const ir::Tensor& c = g.t(c_id);
      ok &= c.is_const() && c.dtype == ir::DType::f32 && n.f("beta", 1.f) == 1.f &&
            (c.shape == ir::Shape{N} || c.shape == ir::Shape{1, N});
    }
    if (!ok) {
      out.push_back(std::move(n));
      continue;
    }
    // (a and b are references into g.tensors, which the constants below may reallocate.)
    ir::Shape yshape = a.shape;
    yshape.back() = N;
    // MatMul then Add(bias): the bias joins the conv, the Add's output is the result.
    std::vector<float> bias;
    int result = n.outputs[0];
    if (matmul && consumers[result].size() == 1 && !g.is_graph_output(result)) {
      const int j = consumers[result][0];
      const ir::Node& add = g.nodes[j];
      const int c = add.op == ir::Op::Add && add.inputs.size() == 2
                        ? (add.inputs[0] == result ? add.inputs[1] : add.inputs[0]) : -1;
      if (c >= 0 && c != result && g.t(c).is_const() && g.t(c).dtype == ir::DType::f32 && g.t(c).numel() == N &&
          !g.t(c).shape.empty() && g.t(c).shape.back() == N && g.t(c).shape.size() <= yshape.size() &&
          g.t(add.outputs[0]).shape == yshape) {
        bias.assign(g.t(c).as<float>(), g.t(c).as<float>() + N);
        result = add.outputs[0];
        absorbed[j] = 1;
      }
    }
    // Weight as OIHW [N,K,1,1].
    std::vector<float> w(N * K);
    const float* bs = b.as<float>();
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k) w[j * K + k] = trans_b ? bs[j * K + k] : bs[k * N + j];
    // A QDQ model's int8 weights keep their scales: per tensor, or per output column (axis 0 of
    // a transposed B, 1 of a plain one), which becomes the conv's output channel. Without them
    // lower_int8 re-quantized the values to a scale of its own: 7-bit weights came out as
    // other integers (MobileNetV3's classifier: a tenth of its outputs one step off).
    ir::QuantParams wq = g.t(n.inputs[1]).quant;
    if (!wq.per_tensor() && !wq.empty()) {
      if (wq.axis == (trans_b ? 0 : 1) && static_cast<int64_t>(wq.scale.size()) == N) wq.axis = 0;
      else wq = {};
    }
    const int wid = g.add_const_f32(g.fresh_name(n.name + ".weight"), {N, K, 1, 1}, w);
    g.t(wid).quant = wq;
    const int shape_in = g.add_const_i64(g.fresh_name(n.name + ".shape4"), {4}, {M, K, 1, 1});
    const int shape_out = g.add_const_i64(g.fresh_name(n.name + ".shape_out"), {static_cast<int64_t>(yshape.size())}, yshape);
    // The views hold the same values as the MatMul's input and output: a QDQ model's
    // quantization of those holds for them too (the int8 conv reads and writes uint8).
    ir::Tensor t4;
    t4.name = g.fresh_name(n.name + ".in4");
    t4.dtype = ir::DType::f32;
    t4.shape = {M, K, 1, 1};
    t4.shape_known = true;
    t4.quant = g.t(n.inputs[0]).quant;
    ir::Tensor y4 = t4;
    y4.name = g.fresh_name(n.name + ".out4");
    y4.shape = {M, N, 1, 1};
    y4.quant = g.t(result).quant;
    const int a4 = g.add_tensor(t4);
    const int o4 = g.add_tensor(y4);

    ir::Node r1;
    r1.op = ir::Op::Reshape;
    r1.name = n.name + ".reshape_in";
    r1.inputs = {n.inputs[0], shape_in};
    r1.outputs = {a4};
    ir::Node conv;
    conv.op = ir::Op::Conv;
    conv.name = n.name;
    conv.inputs = {a4, wid};
    if (c_id >= 0) {
      const ir::Tensor& c = g.t(c_id);
      std::vector<float> cv(c.as<float>(), c.as<float>() + N);
      conv.inputs.push_back(g.add_const_f32(g.fresh_name(n.name + ".bias"), {N}, cv));
    } else if (!bias.empty()) {
      conv.inputs.push_back(g.add_const_f32(g.fresh_name(n.name + ".bias"), {N}, bias));
    }
    conv.outputs = {o4};
    ir::Node r2;
    r2.op = ir::Op::Reshape;
    r2.name = n.name + ".reshape_out";
    r2.inputs = {o4, shape_out};
    r2.outputs = {result};
    out.push_back(std::move(r1));
    out.push_back(std::move(conv));
    out.push_back(std::move(r2));
  }
  g.nodes = std::move(out);
  return Status::Ok();
}

}  // namespace systolic::passes
