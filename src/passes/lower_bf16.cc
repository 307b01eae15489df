// bf16 lowering: every convolution with constant float weights (Gemm and MatMul included, once
// gemm_to_conv made them 1x1 convs) multiplies bf16 values with fp32 accumulation. Its weights
// are rounded to bf16 here (round to nearest even; the kernels then keep them as they are, or
// pack them as bf16 pairs), and it is marked attr "bf16" = 1 (kernel choice, --kernels, the
// reference interpreter, which rounds again: idempotent). Bias, residual, activation and every
// other op stay fp32.
//
// Its input activation is made bf16 where it is produced, never by the conv itself:
//  - a conv output that a bf16 conv reads (directly, or through ops that only move, select or
//    take maxima of values: MaxPool, Relu, Reshape, Concat, Slice...) is rounded by its producer's
//    epilogue (attr "bf16_out" = 1): after the activation, as the value is stored. Its other
//    readers (a residual add, an unfused float op) then see the rounded value too: the same
//    rounding a plan that stores activations in bf16 makes. A graph output is never rounded;
//  - anything else (the graph input, an average pool, an unfused Add) gets one RoundBf16 node
//    per tensor, before the first conv that reads it.
// An image plan's stem (fold_input_normalization) reads the uint8 image itself: integers, exact
// in bf16, with the normalisation's per-channel shift applied in float as a bias would be.
#include <cstring>
#include <map>

#include "kernels/epilogue.h"
#include "passes/pass.h"

namespace systolic::passes {
namespace {

using ir::DType;
using ir::Op;

// Ops whose outputs are input values (or maxima of them, or zero): bf16 in, bf16 out.
bool keeps_bf16(Op op) {
  switch (op) {
    case Op::MaxPool: case Op::GlobalMaxPool: case Op::Relu: case Op::Reshape: case Op::Flatten:
    case Op::Squeeze: case Op::Unsqueeze: case Op::Identity: case Op::Dropout: case Op::Transpose:
    case Op::Concat: case Op::Slice: case Op::Split: case Op::ChannelShuffle:
      return true;
    default:
      return false;
  }
}

// The inputs of a keeps_bf16 op that carry values (the rest are shapes, axes, indices).
int value_inputs(const ir::Node& n) {
  return n.op == Op::Concat || n.op == Op::ChannelShuffle ? static_cast<int>(n.inputs.size()) : 1;
}

bool is_bf16_conv(const ir::Graph& g, const ir::Node& n) {
  if (n.op != Op::Conv || n.inputs.size() < 2 || n.outputs.empty()) return false;
  const int w = n.inputs[1];
  if (w < 0 || !g.t(w).is_const() || g.t(w).dtype != DType::f32) return false;
  const int x = n.inputs[0];
  return x >= 0 && (g.t(x).dtype == DType::f32 || n.i("src_u8", 0)) && g.t(n.outputs[0]).dtype == DType::f32;
}

}  // namespace

Status lower_bf16(ir::Graph& g, PassContext& ctx) {
  if (ctx.precision != Precision::bf16 || !ctx.optimize) return Status::Ok();
  const std::size_t count = g.tensors.size();
  // need[t]: a bf16 conv reads t, directly or through keeps_bf16 ops (walked backwards).
  std::vector<char> need(count, 0);
  for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it) {
    const ir::Node& n = *it;
    if (is_bf16_conv(g, n)) {
      if (!n.i("src_u8", 0)) need[n.inputs[0]] = 1;
      continue;
    }
    if (!keeps_bf16(n.op)) continue;
    bool out_needed = false;
    for (int o : n.outputs) out_needed |= o >= 0 && need[o];
    if (!out_needed) continue;
    for (int i = 0; i < value_inputs(n); ++i)
      if (n.inputs[i] >= 0) need[n.inputs[i]] = 1;
  }
  // Forward: round weights, mark epilogues, track which tensors hold bf16 values, and round
  // the rest where a conv reads them.
  std::vector<char> bf16(count, 0);
  std::map<int, int> rounded;  // tensor -> its RoundBf16 output
  std::vector<ir::Node> out;
  int convs = 0, steps = 0, epilogues = 0;
  std::vector<ir::Node> nodes = std::move(g.nodes);
  g.nodes.clear();
  for (ir::Node& n : nodes) {
    if (is_bf16_conv(g, n)) {
      // Adding tensors moves them: nothing below holds a reference across g.add_*.
      const ir::Tensor& w = g.t(n.inputs[1]);
      std::vector<float> wr(w.as<float>(), w.as<float>() + w.numel());
      for (float& v : wr) v = kernels::round_bf16(v);
      const ir::Shape shape = w.shape;
      const std::string wname = g.fresh_name(w.name + ".bf16");
      n.inputs[1] = g.add_const_f32(wname, shape, wr);
      n.set_i("bf16", 1);
      const int x = n.inputs[0];
      if (!n.i("src_u8", 0) && !bf16[x]) {
        auto it = rounded.find(x);
        if (it == rounded.end()) {
          ir::Tensor t = g.t(x);
          t.name = g.fresh_name(t.name + ".bf16");
          t.data.reset();
          t.arena_offset = -1;
          t.quant = {};
          const int id = g.add_tensor(std::move(t));
          bf16.resize(g.tensors.size(), 0);
          bf16[id] = 1;
          ir::Node r;
          r.op = Op::RoundBf16;
          r.name = g.t(id).name;
          r.inputs = {x};
          r.outputs = {id};
          out.push_back(std::move(r));
          it = rounded.emplace(x, id).first;
          ++steps;
        }
        n.inputs[0] = it->second;
      }
      const int y = n.outputs[0];
      if (need[y] && !g.is_graph_output(y)) {
        n.set_i("bf16_out", 1);
        bf16[y] = 1;
        ++epilogues;
      }
      ++convs;
    } else if (keeps_bf16(n.op)) {
      bool all = true;
      for (int i = 0; i < value_inputs(n); ++i) all &= n.inputs[i] >= 0 && bf16[n.inputs[i]];
      if (all)
        for (int o : n.outputs)
          if (o >= 0 && g.t(o).dtype == DType::f32) bf16[o] = 1;  // not a MaxPool's Indices
    }
    out.push_back(std::move(n));
  }
  g.nodes = std::move(out);
  ctx.log += "lower_bf16: " + std::to_string(convs) + " convolutions in bf16, " + std::to_string(epilogues) +
             " rounding their output, " + std::to_string(steps) + " RoundBf16 steps\n";
  return Status::Ok();
}

}  // namespace systolic::passes
