// Dead-code elimination: drops nodes whose outputs nobody reads, and inference no-ops
// (Identity, Dropout without a used mask, a Pad of zeros) by rewiring their consumers to the
// input.
#include "passes/pass.h"
#include "passes/pattern.h"

namespace systolic::passes {

namespace {

// A Pad that adds nothing (every pad a constant 0: PyTorch's export of DenseNet's average
// pools writes one) and keeps its input's quantization.
bool zero_pad(const ir::Graph& g, const ir::Node& n) {
  std::vector<int64_t> pads;
  if (!pad_amounts(g, n, &pads)) return false;
  for (int64_t v : pads)
    if (v != 0) return false;
  return true;
}

}  // namespace

Status dead_code_elimination(ir::Graph& g, PassContext&) {
  // Bypass no-ops whose output is not a graph output.
  std::vector<int> alias(g.tensors.size());
  for (std::size_t i = 0; i < alias.size(); ++i) alias[i] = static_cast<int>(i);
  auto consumers = g.consumers();
  std::vector<char> drop(g.nodes.size(), 0);
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    ir::Node& n = g.nodes[k];
    for (int& in : n.inputs)
      if (in >= 0) in = alias[in];
    const bool noop = n.op == ir::Op::Identity || zero_pad(g, n) ||
                      (n.op == ir::Op::Dropout && (n.outputs.size() < 2 || n.outputs[1] < 0 ||
                                                   consumers[n.outputs[1]].empty()));
    if (noop && !g.is_graph_output(n.outputs[0]) &&
        !(n.outputs.size() > 1 && n.outputs[1] >= 0 && g.is_graph_output(n.outputs[1]))) {
      alias[n.outputs[0]] = n.inputs[0];
      drop[k] = 1;
    }
  }
  // Mark live nodes backwards from the graph outputs.
  std::vector<char> live_t(g.tensors.size(), 0);
  for (int o : g.outputs) live_t[o] = 1;
  std::vector<char> live_n(g.nodes.size(), 0);
  for (int k = static_cast<int>(g.nodes.size()) - 1; k >= 0; --k) {
    if (drop[k]) continue;
    const ir::Node& n = g.nodes[k];
    bool used = false;
    for (int o : n.outputs) used |= o >= 0 && live_t[o];
    if (!used) continue;
    live_n[k] = 1;
    for (int in : n.inputs)
      if (in >= 0) live_t[in] = 1;
  }
  for (char& l : live_n) l = !l;
  g.remove_nodes(live_n);
  // Constants nobody reads any more release their data.
  for (std::size_t i = 0; i < g.tensors.size(); ++i)
    if (!live_t[i] && g.tensors[i].is_const()) g.tensors[i].data.reset();
  return Status::Ok();
}

}  // namespace systolic::passes
