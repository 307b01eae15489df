// Quantize-reorder fusion: a float NCHW tensor quantized for NHWC int8 kernels (a float model
// input ahead of an int8 stem) went through QuantizeLinear in the plain order, then a uint8
// reorder to NHWC. The QuantizeLinear now writes the NHWC tensor itself (the runtime's
// quantize_nhwc kernel) and the reorder goes: one pass over the image instead of two, and the
// 3-channel byte reorder was the slower of them.
#include "passes/pass.h"

namespace systolic::passes {

Status fuse_quantize_reorder(ir::Graph& g, PassContext&) {
  const auto consumers = g.consumers();
  const auto producers = g.producers();
  std::vector<char> drop(g.nodes.size(), 0);
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const ir::Node& r = g.nodes[k];
    if (r.op != ir::Op::Reorder || r.i("to", 0) != static_cast<int64_t>(ir::Layout::nhwc)) continue;
    const int t = r.inputs[0];
    const ir::Tensor& q8 = g.t(t);
    if (q8.dtype != ir::DType::u8 || q8.shape.size() != 4 || q8.layout != ir::Layout::plain) continue;
    if (g.is_graph_output(t) || consumers[t].size() != 1 || producers[t] < 0) continue;
    ir::Node& q = g.nodes[static_cast<std::size_t>(producers[t])];
    if (q.op != ir::Op::QuantizeLinear || q.outputs.size() != 1) continue;
    const ir::Tensor& x = g.t(q.inputs[0]);
    if (x.dtype != ir::DType::f32 || x.layout != ir::Layout::plain || x.shape != q8.shape) continue;
    // Only what the quantize kernels take (runtime/session_quant.cc): one positive float scale
    // and a uint8 zero point, constant; anything else keeps its reorder.
    const int s = q.in(1), z = q.in(2);
    if (s < 0 || !g.t(s).is_const() || g.t(s).dtype != ir::DType::f32 || g.t(s).numel() != 1 ||
        !(g.t(s).as<float>()[0] > 0.f))
      continue;
    if (z >= 0 && (!g.t(z).is_const() || g.t(z).dtype != ir::DType::u8 || g.t(z).numel() != 1)) continue;
    q.outputs[0] = r.outputs[0];
    drop[k] = 1;
  }
  g.remove_nodes(drop);
  return Status::Ok();
}

}  // namespace systolic::passes
