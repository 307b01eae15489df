// Channel-shuffle fusion: ShuffleNet mixes its branches with Reshape [N,C,H,W] -> [N,g,C/g,H,W],
// Transpose perm (0,2,1,3,4), Reshape back to [N,C,H,W]. Five-dimensional tensors have no NHWC
// form, so the chain ran in the plain order with a reorder each way and a generic transpose
// between. One ChannelShuffle node (attribute group) is one copy, and it follows its input's
// layout (layout_assignment.cc): on NHWC data the same permutation of each pixel's channels.
// A channel Concat of one input per group (cat(x1, branch(x2)) in every ShuffleNet block) that
// only the shuffle reads is absorbed: the shuffle takes the Concat's inputs and interleaves
// them in one copy, where the Concat and the shuffle were two (not in int8 plans, where the
// Concat requantizes and the shuffle moves uint8 values as they are, nor in calibration plans).
#include "passes/pass.h"
#include "passes/pattern.h"

namespace systolic::passes {

Status fuse_channel_shuffle(ir::Graph& g, PassContext& ctx) {
  auto consumers = g.consumers();
  auto producers = g.producers();
  std::vector<char> drop(g.nodes.size(), 0);
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const ir::Node& r1 = g.nodes[k];
    if (r1.op != ir::Op::Reshape || r1.inputs.empty() || r1.outputs.size() != 1) continue;
    const ir::Tensor& x = g.t(r1.inputs[0]);
    const ir::Shape& split = g.t(r1.outputs[0]).shape;
    if (x.dynamic || x.shape.size() != 4 || split.size() != 5) continue;
    const int64_t c = x.shape[1], groups = split[1];
    if (groups < 1 || split[0] != x.shape[0] || groups * split[2] != c || split[3] != x.shape[2] ||
        split[4] != x.shape[3])
      continue;
    const int tr = only_consumer(g, consumers, r1.outputs[0], ir::Op::Transpose);
    if (tr < 0 || g.nodes[tr].ints("perm") != std::vector<int64_t>{0, 2, 1, 3, 4}) continue;
    const int r2 = only_consumer(g, consumers, g.nodes[tr].outputs[0], ir::Op::Reshape);
    if (r2 < 0 || g.t(g.nodes[r2].outputs[0]).shape != x.shape) continue;
    ir::Node& out = g.nodes[r2];
    out.op = ir::Op::ChannelShuffle;
    out.inputs = {r1.inputs[0]};
    out.attrs.clear();
    out.set_i("group", groups);
    drop[k] = drop[tr] = 1;
    // In int8 the Concat requantizes its inputs to one scale (lower_int8.cc), which the
    // shuffle, passing uint8 values through, does not; a calibration plan observes the
    // Concat's output for it.
    const int p = producers[out.inputs[0]];
    if (ctx.precision == Precision::int8 || !ctx.fuse_residual || p < 0 || consumers[out.inputs[0]].size() != 1 ||
        g.is_graph_output(out.inputs[0]))
      continue;
    const ir::Node& cat = g.nodes[p];
    bool absorb = cat.op == ir::Op::Concat && static_cast<int64_t>(cat.inputs.size()) == groups &&
                  (cat.i("axis", 0) == 1 || cat.i("axis", 0) == -3);
    for (int id : cat.inputs)
      absorb = absorb && id >= 0 && g.t(id).shape.size() == 4 && g.t(id).shape[1] == c / groups &&
               g.t(id).dtype == x.dtype;
    if (!absorb) continue;
    out.inputs = cat.inputs;
    drop[p] = 1;
  }
  g.remove_nodes(drop);
  return Status::Ok();
}

}  // namespace systolic::passes
