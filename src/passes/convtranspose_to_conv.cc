// A ConvTranspose whose kernel equals its stride (no overlap: the 2x2 stride-2 upsampling of
// segmentation and text-detection heads) is a 1x1 convolution to Cout*s*s channels followed by
// DepthToSpace (DCR): y[c, h*s+i, w*s+j] = conv[(i*s + j)*Cout + c, h, w]. The conv runs on the
// packed matrix kernels; a BatchNormalization right after is folded into its weights. DCR keeps
// each (i, j) tap's Cout channels together, so on NHWC data the DepthToSpace moves whole runs
// of s*Cout values and stays in NHWC (runtime/session.cc).
#include <cmath>

#include "passes/pass.h"

namespace systolic::passes {

Status convtranspose_to_conv(ir::Graph& g, PassContext&) {
  const auto consumers = g.consumers();
  std::vector<char> absorbed(g.nodes.size(), 0);
  std::vector<ir::Node> out;
  for (std::size_t idx = 0; idx < g.nodes.size(); ++idx) {
    if (absorbed[idx]) continue;
    ir::Node& n = g.nodes[idx];
    if (n.op != ir::Op::ConvTranspose) {
      out.push_back(std::move(n));
      continue;
    }
    const ir::Tensor& x = g.t(n.inputs[0]);
    const ir::Tensor& w = g.t(n.inputs[1]);
    const int b_id = n.in(2);
    bool ok = x.dtype == ir::DType::f32 && x.shape.size() == 4 && w.is_const() && w.dtype == ir::DType::f32 &&
              w.shape.size() == 4 && w.shape[2] == w.shape[3] && n.i("group", 1) == 1 && !n.has("output_shape") &&
              n.s("auto_pad", "NOTSET") == "NOTSET" &&
              (b_id < 0 || (g.t(b_id).is_const() && g.t(b_id).dtype == ir::DType::f32 &&
                            g.t(b_id).numel() == w.shape[1]));
    const int64_t s = ok ? w.shape[2] : 0;
    for (int64_t v : n.ints("strides", {1, 1})) ok &= v == s;
    for (int64_t v : n.ints("dilations", {1, 1})) ok &= v == 1;
    for (int64_t v : n.ints("pads", {0, 0, 0, 0})) ok &= v == 0;
    for (int64_t v : n.ints("output_padding", {0, 0})) ok &= v == 0;
    if (!ok || s < 1) {
      out.push_back(std::move(n));
      continue;
    }
    const int64_t Cin = w.shape[0], Cout = w.shape[1], taps = s * s;
    // Per output channel: y = a[c] * (conv + bias) + b[c] (a BatchNormalization folded in).
    std::vector<double> a(Cout, 1.0), shift(Cout, 0.0);
    int result = n.outputs[0];
    const int t = n.outputs[0];
    if (consumers[t].size() == 1 && !g.is_graph_output(t)) {
      const int j = consumers[t][0];
      const ir::Node& bn = g.nodes[j];
      bool fold = bn.op == ir::Op::BatchNormalization && bn.inputs.size() >= 5 && bn.inputs[0] == t &&
                  !bn.i("training_mode", 0);
      for (std::size_t k = 1; fold && k < 5; ++k)
        fold = g.t(bn.inputs[k]).is_const() && g.t(bn.inputs[k]).dtype == ir::DType::f32 && g.t(bn.inputs[k]).numel() == Cout;
      for (std::size_t k = 1; fold && k < bn.outputs.size(); ++k) fold = bn.outputs[k] < 0;
      if (fold) {
        const double eps = bn.f("epsilon", 1e-5f);
        for (int64_t c = 0; c < Cout; ++c) {
          const double sc = g.t(bn.inputs[1]).as<float>()[c], bb = g.t(bn.inputs[2]).as<float>()[c];
          const double mean = g.t(bn.inputs[3]).as<float>()[c], var = g.t(bn.inputs[4]).as<float>()[c];
          a[c] = sc / std::sqrt(var + eps);
          shift[c] = bb - mean * a[c];
        }
        result = bn.outputs[0];
        absorbed[j] = 1;
      }
    }
    std::vector<float> w2(static_cast<std::size_t>(Cout * taps * Cin)), b2(static_cast<std::size_t>(Cout * taps));
    const float* ws = w.as<float>();
    for (int64_t c = 0; c < Cout; ++c)
      for (int64_t tap = 0; tap < taps; ++tap) {
        const int64_t row = tap * Cout + c;
        for (int64_t ci = 0; ci < Cin; ++ci) w2[row * Cin + ci] = static_cast<float>(a[c] * ws[(ci * Cout + c) * taps + tap]);
        const double bias = b_id >= 0 ? g.t(b_id).as<float>()[c] : 0.0;
        b2[row] = static_cast<float>(a[c] * bias + shift[c]);
      }
    ir::Tensor mid;
    mid.name = g.fresh_name(n.name + ".taps");
    mid.dtype = ir::DType::f32;
    mid.shape = {x.shape[0], Cout * taps, x.shape[2], x.shape[3]};
    mid.shape_known = true;
    const int m = g.add_tensor(mid);
    ir::Node conv;
    conv.op = ir::Op::Conv;
    conv.name = n.name;
    conv.inputs = {n.inputs[0], g.add_const_f32(g.fresh_name(n.name + ".weight"), {Cout * taps, Cin, 1, 1}, w2),
                   g.add_const_f32(g.fresh_name(n.name + ".bias"), {Cout * taps}, b2)};
    conv.outputs = {m};
    ir::Node d2s;
    d2s.op = ir::Op::DepthToSpace;
    d2s.name = n.name + ".depth_to_space";
    d2s.set_i("blocksize", s);
    d2s.attrs["mode"].kind = ir::Attr::s;
    d2s.attrs["mode"].str_v = "DCR";
    d2s.set_i("_opset", 13);
    d2s.inputs = {m};
    d2s.outputs = {result};
    out.push_back(std::move(conv));
    out.push_back(std::move(d2s));
  }
  g.nodes = std::move(out);
  return Status::Ok();
}

}  // namespace systolic::passes
