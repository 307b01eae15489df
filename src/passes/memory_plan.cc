// Static memory planning: every activation gets an offset in one arena; tensors whose
// lifetimes do not overlap share bytes (greedy by size, largest first, lowest fitting offset).
// A view (Reshape, Flatten, Squeeze, Unsqueeze, Identity of a plain tensor, or a Reorder of a
// tensor with one channel or 1x1 pixels, whose NCHW and NHWC bytes are the same: transformers'
// linear layers run as convs on [M,K,1,1]) shares its input's bytes: the two are placed as one
// tensor living as long as both, and the step copies nothing.
#include <algorithm>

#include "passes/pass.h"

namespace systolic::passes {

namespace {
constexpr int64_t kAlign = 64;
int64_t align_up(int64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

bool is_view(const ir::Graph& g, const ir::Node& n) {
  switch (n.op) {
    case ir::Op::Reshape: case ir::Op::Flatten: case ir::Op::Squeeze: case ir::Op::Unsqueeze: case ir::Op::Identity:
    case ir::Op::Reorder:
      break;
    default: return false;
  }
  if (n.inputs.empty() || n.inputs[0] < 0 || n.outputs.size() != 1 || n.outputs[0] < 0) return false;
  const ir::Tensor& x = g.t(n.inputs[0]);
  const ir::Tensor& y = g.t(n.outputs[0]);
  if (n.op == ir::Op::Reorder)
    return !x.is_const() && x.dtype == y.dtype && x.shape == y.shape && x.shape.size() == 4 &&
           (x.shape[1] == 1 || x.shape[2] * x.shape[3] == 1);
  return !x.is_const() && !y.is_const() && x.dtype == y.dtype && x.bytes() == y.bytes() &&
         x.layout == ir::Layout::plain && y.layout == ir::Layout::plain;
}
}  // namespace

Status memory_plan(ir::Graph& g, PassContext&) {
  const int nt = static_cast<int>(g.tensors.size());
  const int end = static_cast<int>(g.nodes.size());
  std::vector<int> first(nt, -2), last(nt, -2);
  for (int id : g.inputs) first[id] = last[id] = -1;
  for (int k = 0; k < end; ++k) {
    for (int in : g.nodes[k].inputs)
      if (in >= 0 && !g.t(in).is_const()) last[in] = k;
    for (int o : g.nodes[k].outputs)
      if (o >= 0) {
        if (first[o] == -2) first[o] = k;
        last[o] = std::max(last[o], k);
      }
  }
  for (int o : g.outputs) last[o] = end;
  // Views join their input's group; the group's root is placed for the union of lifetimes.
  std::vector<int> root(nt);
  for (int i = 0; i < nt; ++i) root[i] = i;
  for (const ir::Node& n : g.nodes)
    if (is_view(g, n) && first[n.outputs[0]] != -1) {
      const int r = root[n.inputs[0]], o = n.outputs[0];
      root[o] = r;
      first[r] = std::min(first[r], first[o]);
      last[r] = std::max(last[r], last[o]);
    }
  std::vector<int> order;
  for (int i = 0; i < nt; ++i) {
    g.t(i).arena_offset = -1;
    if (first[i] != -2 && !g.t(i).is_const() && root[i] == i) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return g.t(a).bytes() > g.t(b).bytes(); });
  struct Placed {
    int64_t off, size;
    int first, last;
  };
  std::vector<Placed> placed;
  int64_t arena = 0;
  for (int id : order) {
    const int64_t size = align_up(std::max<int64_t>(1, static_cast<int64_t>(g.t(id).bytes())));
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (const Placed& p : placed)
      if (!(p.last < first[id] || last[id] < p.first)) busy.push_back({p.off, p.off + p.size});
    std::sort(busy.begin(), busy.end());
    int64_t off = 0;
    for (const auto& [b, e] : busy) {
      if (off + size <= b) break;
      off = std::max(off, e);
    }
    g.t(id).arena_offset = off;
    placed.push_back({off, size, first[id], last[id]});
    arena = std::max(arena, off + size);
  }
  for (int i = 0; i < nt; ++i)
    if (root[i] != i) g.t(i).arena_offset = g.t(root[i]).arena_offset;
  g.arena_bytes = arena;
  return Status::Ok();
}

}  // namespace systolic::passes
