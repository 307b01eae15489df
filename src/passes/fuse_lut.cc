// Table fusion: a uint8 table (Lut: SiLU, HardSwish, a sigmoid gate, GELU between two grids,
// passes/int8_tables.cc) whose input is an int8 conv's output read by nothing else becomes the
// conv's last epilogue step (attribute q_table): each kernel looks up the rows it has just
// written, still in L1, where the table was a pass over the whole tensor after it.
// EfficientNet-B0 at batch 16 ran 65 such passes, 2 of its 35 ms.
#include "passes/pass.h"

namespace systolic::passes {

Status fuse_lut(ir::Graph& g, PassContext&) {
  const auto consumers = g.consumers();
  const auto producers = g.producers();
  std::vector<char> drop(g.nodes.size(), 0);
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const ir::Node& lut = g.nodes[k];
    if (lut.op != ir::Op::Lut || lut.inputs.size() != 1 || lut.outputs.size() != 1 || lut.outputs[0] < 0) continue;
    const int t = lut.inputs[0], y = lut.outputs[0];
    if (t < 0 || producers[t] < 0 || consumers[t].size() != 1 || g.is_graph_output(t)) continue;
    const ir::Tensor& x = g.t(t);
    const ir::Tensor& out = g.t(y);
    if (x.dtype != ir::DType::u8 || out.dtype != ir::DType::u8 || x.shape != out.shape || x.layout != out.layout)
      continue;
    ir::Node& conv = g.nodes[static_cast<std::size_t>(producers[t])];
    // An int8 conv writing uint8 (lower_int8 gave it its scales), without a table already.
    if (conv.op != ir::Op::Conv || conv.outputs.size() != 1 || !conv.attrs.count("q_scale") ||
        conv.i("q_out_f32", 0) != 0 || conv.attrs.count("q_table"))
      continue;
    std::vector<int64_t> table = lut.ints("table");
    bool ok = table.size() == 256;
    for (int64_t v : table) ok = ok && v >= 0 && v <= 255;
    if (!ok) continue;
    conv.set_ints("q_table", std::move(table));
    conv.outputs[0] = y;
    drop[k] = 1;
  }
  g.remove_nodes(drop);
  return Status::Ok();
}

}  // namespace systolic::passes
