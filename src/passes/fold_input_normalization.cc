// Input-normalisation folding: NormalizeImage feeding a convolution disappears into it. With
// s = 1 / (255 std) and p = 255 mean per channel, (u / 255 - mean) / std = s (u - p), so the
// conv takes weights w * s and reads the uint8 image directly as u - p (zero padding in the
// normalised image is zero in u - p too). The kernel converts while it packs its tiles: no
// float image is ever materialised. Kept when no optimized kernel can read uint8 that way.
#include "interp/nn_geometry.h"
#include "kernels/conv/conv.h"
#include "passes/pass.h"

namespace systolic::passes {

Status fold_input_normalization(ir::Graph& g, PassContext& ctx) {
  auto consumers = g.consumers();
  std::vector<char> drop(g.nodes.size(), 0);
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const ir::Node& norm = g.nodes[k];
    if (norm.op != ir::Op::NormalizeImage) continue;
    const int x = norm.outputs[0];
    if (consumers[x].size() != 1 || g.is_graph_output(x)) continue;
    ir::Node& conv = g.nodes[consumers[x][0]];
    if (conv.op != ir::Op::Conv || conv.inputs[0] != x) continue;
    const ir::Tensor& w = g.t(conv.inputs[1]);
    if (!w.is_const() || w.dtype != ir::DType::f32 || w.shape.size() != 4) continue;
    kernels::ConvParams p;
    if (!interp::conv_geometry(conv, g.t(x).shape, w.shape, &p).ok()) continue;
    p.src_u8 = 1;
    std::string why;
    const kernels::ConvKernel* kern = kernels::conv_select(p, ctx.cpu, &why);
    if (!kern || std::string(kern->name) == "conv_f32_ref") {
      ctx.log += norm.name + ": NormalizeImage kept (no optimized kernel reads uint8 for " + conv.name + ")\n" + why;
      continue;
    }
    const auto mean = norm.attrs.at("mean").floats_v;
    const auto std = norm.attrs.at("std").floats_v;
    const int64_t oc = w.shape[0], ic = w.shape[1], taps = w.shape[2] * w.shape[3];
    std::vector<float> nw(w.as<float>(), w.as<float>() + w.numel());
    for (int64_t o = 0; o < oc; ++o)
      for (int64_t c = 0; c < ic; ++c)
        for (int64_t t = 0; t < taps; ++t) nw[(o * ic + c) * taps + t] /= 255.f * std[c];
    std::vector<float> offset(ic);
    for (int64_t c = 0; c < ic; ++c) offset[c] = 255.f * mean[c];
    conv.inputs[0] = norm.inputs[0];
    conv.inputs[1] = g.add_const_f32(g.fresh_name(w.name + ".normalized"), w.shape, nw);
    conv.set_i("src_u8", 1);
    ir::Attr a;
    a.kind = ir::Attr::floats;
    a.floats_v = offset;
    conv.attrs["src_offset"] = a;
    drop[k] = 1;
  }
  g.remove_nodes(drop);
  return Status::Ok();
}

}  // namespace systolic::passes
