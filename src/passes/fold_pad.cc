// Pad folding: a constant-zero Pad of H and W feeding only an AveragePool or a Conv becomes
// that op's own padding (the pool then counts the padded zeros: count_include_pad). PyTorch
// exports Inception's `avg_pool2d(x, 3, 1, 1)` as Pad + AveragePool: in an int8 plan each Pad ran
// in float with a Dequantize, reorders and a Quantize around it, 8 of Inception v3's 28 ms at
// batch 1. Exact: the pool sums the same values and divides by the same count, a conv's zero
// padding is the Pad's zeros; in a QDQ model the Pad's output grid must be its input's (0 is
// on it), so the rounding the Pad's Q/DQ pair stood for changes nothing.
#include <algorithm>

#include "passes/pass.h"
#include "passes/pattern.h"

namespace systolic::passes {
namespace {

// The Pad's H and W amounts {top, left, bottom, right} if it is a constant-zero pad of the
// spatial axes of a 4-D tensor only, else false.
bool spatial_zero_pad(const ir::Graph& g, const ir::Node& n, int64_t hw[4]) {
  std::vector<int64_t> pads;
  if (!pad_amounts(g, n, &pads) || n.outputs.size() != 1) return false;
  if (n.s("mode", "constant") != "constant" || n.in(3) >= 0) return false;  // no axes input
  const ir::Tensor& x = g.t(n.inputs[0]);
  const ir::Tensor& y = g.t(n.outputs[0]);
  if (x.shape.size() != 4 || y.shape.size() != 4 || x.dtype != ir::DType::f32) return false;
  if (pads.size() != 8 || pads[0] || pads[1] || pads[4] || pads[5]) return false;
  for (int64_t v : pads)
    if (v < 0) return false;
  if (n.f("value", 0.f) != 0.f) return false;
  if (n.in(2) >= 0) {
    const ir::Tensor& v = g.t(n.in(2));
    if (!v.is_const() || v.dtype != ir::DType::f32 || v.numel() != 1 || v.as<float>()[0] != 0.f) return false;
  }
  hw[0] = pads[2], hw[1] = pads[3], hw[2] = pads[6], hw[3] = pads[7];
  return true;
}

}  // namespace

Status fold_pad(ir::Graph& g, PassContext&) {
  const auto consumers = g.consumers();
  std::vector<char> drop(g.nodes.size(), 0);
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const ir::Node& pad = g.nodes[k];
    int64_t hw[4];
    if (pad.op != ir::Op::Pad || !spatial_zero_pad(g, pad, hw)) continue;
    const int y = pad.outputs[0];
    if (g.is_graph_output(y) || consumers[y].size() != 1) continue;
    ir::Node& c = g.nodes[static_cast<std::size_t>(consumers[y][0])];
    if (c.op != ir::Op::AveragePool && c.op != ir::Op::Conv) continue;
    if (c.inputs.empty() || c.inputs[0] != y || std::count(c.inputs.begin(), c.inputs.end(), y) != 1) continue;
    const std::string auto_pad = c.s("auto_pad", "NOTSET");
    if (auto_pad != "NOTSET" && !auto_pad.empty()) continue;
    std::vector<int64_t> pads = c.ints("pads");
    if (pads.empty()) pads.assign(4, 0);
    if (pads.size() != 4) continue;
    if (c.op == ir::Op::AveragePool) {
      // Padding the pool already left out of its count cannot be told apart from the Pad's
      // zeros; nor can windows that ceil_mode lets past the padding.
      const bool pool_pads = pads[0] || pads[1] || pads[2] || pads[3];
      if ((pool_pads && c.i("count_include_pad", 0) == 0) || c.i("ceil_mode", 0) != 0) continue;
      c.set_i("count_include_pad", 1);
    }
    for (int i = 0; i < 4; ++i) pads[i] += hw[i];
    c.set_ints("pads", pads);
    c.inputs[0] = pad.inputs[0];
    drop[k] = 1;
  }
  g.remove_nodes(drop);
  return Status::Ok();
}

}  // namespace systolic::passes
