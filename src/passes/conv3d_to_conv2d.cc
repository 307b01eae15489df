// 3-D convs (video and volume models) run as 2-D convs on the matrix kernels, and the activations
// between them as 4-D tensors the layout pass stores NHWC (so NDHWC: no transposes between
// layers).
//
// A 5-D activation X [N, C, D, H, W] is held as X4 [N*D, C, H, W] (item n*D + d is depth slice
// d of clip n). A conv of kernel (KD, KH, KW) reads, for output depth o and tap t, the slice
// o*SD - PD + t*DD (zeros outside the clip): one Gather along X4's first axis per tap
// (attribute zero_fill: index -1 gives zeros), and the taps' Concat along the channels is
// [N*Do, KD*C, H, W], on which a 2-D conv with the weight [M, C, KD, KH, KW] reordered to
// [M, KD*C, KH, KW] sums exactly the 3-D conv's products into [N*Do, M, Ho, Wo]: the output's
// 4-D form. A (1, k, k) conv (R(2+1)D's spatial half) reads X4 itself; a (k, 1, 1) one (its
// temporal half) is a 1x1 conv. Element-wise ops between convs (ReLU, the residual Add) run on
// the 4-D forms; a 5-D value is made (one transpose) only where another op reads it. The 2-D
// convs get what 2-D convs get: Winograd for 3x3, packed weights, fused epilogues, bf16.
// A grouped conv with depth taps, whose groups would need their channels apart, is lowered
// on the 5-D form instead (transpose, pad, gather, conv, transpose back). 3-D max and average
// pools become a 2-D pool of each depth slice and, with depth taps, the Max (or Mean) of their
// Gathers (a max pool's taps past the clip read a tap inside the window instead: the maximum is
// the same); global pools a 2-D global pool and a mean (max) over depth; a channel Concat of
// 4-D forms is their Concat.
// Runs after fold_batchnorm, which folds a 3-D batch norm into the conv before it.
#include <map>
#include <set>

#include "interp/nn_geometry.h"
#include "passes/pass.h"

namespace systolic::passes {
namespace {

using ir::Op;

struct Builder {
  ir::Graph& g;
  std::vector<ir::Node>& out;
  std::string base;
  // A QDQ model's quantization of the values the new tensors hold (moved, or the conv's output):
  // lower_int8 then runs the 2-D convs in int8 as it would the 3-D ones.
  ir::QuantParams quant = {};

  int tensor(const char* what, ir::Shape shape) { return named(g.fresh_name(base + "." + what), std::move(shape)); }
  // A tensor of this exact name (a 4-D form's: volume_held_name, once per 5-D tensor).
  int named(const std::string& name, ir::Shape shape) {
    ir::Tensor t;
    t.name = name;
    t.dtype = ir::DType::f32;
    t.shape = std::move(shape);
    t.shape_known = true;
    t.quant = quant;
    return g.add_tensor(std::move(t));
  }
  // A node of one output: a new tensor of `shape`, or `into` when given.
  int node(Op op, const char* what, std::vector<int> inputs, ir::Shape shape, int into = -1) {
    ir::Node n;
    n.op = op;
    n.name = g.fresh_name(base + "." + what);
    n.inputs = std::move(inputs);
    n.outputs = {into >= 0 ? into : tensor(what, std::move(shape))};
    const int y = n.outputs[0];
    out.push_back(std::move(n));
    return y;
  }
  int transpose(int x, std::vector<int64_t> perm, int into = -1) {
    ir::Shape s;
    for (int64_t p : perm) s.push_back(g.t(x).shape[p]);
    const int y = node(Op::Transpose, "transpose", {x}, s, into);
    out.back().set_ints("perm", std::move(perm));
    return y;
  }
  int reshape(int x, ir::Shape s) {
    const int shape = g.add_const_i64(g.fresh_name(base + ".shape"), {static_cast<int64_t>(s.size())}, s);
    return node(Op::Reshape, "reshape", {x, shape}, s);
  }
  int gather(int x, const std::vector<int64_t>& idx, ir::Shape s, int64_t axis, bool zero_fill) {
    const int at = g.add_const_i64(g.fresh_name(base + ".taps"), {static_cast<int64_t>(idx.size())}, idx);
    const int y = node(Op::Gather, "taps", {x, at}, s);
    out.back().set_i("axis", axis);
    if (zero_fill) out.back().set_i("zero_fill", 1);
    return y;
  }
};

// A 5-D activation held in 4-D form: tensor `id4` [N*D, C, H, W].
struct Held {
  int id4;
  int64_t n, c, d, h, w;
};

// The weight [M, Cg, KD, KH, KW] as [M, KD*Cg, KH, KW], tap-major channels.
int weight_2d(ir::Graph& g, const ir::Node& conv, const kernels::VolumeConvParams& p) {
  const ir::Tensor& wt = g.t(conv.inputs[1]);
  const int64_t M = p.oc, Cg = p.ic / p.groups, KD = p.dims[0].k, khw = p.dims[1].k * p.dims[2].k;
  std::vector<float> w2(static_cast<std::size_t>(wt.numel()));
  const float* W = wt.as<float>();
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < Cg; ++c)
      for (int64_t t = 0; t < KD; ++t)
        for (int64_t i = 0; i < khw; ++i) w2[((m * KD + t) * Cg + c) * khw + i] = W[((m * Cg + c) * KD + t) * khw + i];
  const ir::QuantParams q = wt.quant;  // per output channel: M stays axis 0
  const int id = g.add_const_f32(g.fresh_name(conv.name + ".weight2d"), {M, KD * Cg, p.dims[1].k, p.dims[2].k}, w2);
  g.t(id).quant = q;
  return id;
}

// The 2-D conv of `conv`'s H and W geometry on input x, into a new [N*Do, M, Ho, Wo] tensor.
int conv_2d(Builder& b, const ir::Node& conv, const kernels::VolumeConvParams& p, int x) {
  const kernels::SpatialDim h = p.dims[1], w = p.dims[2];
  ir::Node c = conv;
  c.name = conv.name + ".2d";
  c.inputs[0] = x;
  c.inputs[1] = weight_2d(b.g, conv, p);
  c.attrs.erase("auto_pad");
  c.set_ints("kernel_shape", {h.k, w.k});
  c.set_ints("strides", {h.s, w.s});
  c.set_ints("dilations", {h.d, w.d});
  c.set_ints("pads", {h.pad_begin, w.pad_begin, h.pad_end, w.pad_end});
  b.quant = b.g.t(conv.outputs[0]).quant;
  c.outputs = {b.named(volume_held_name(b.g.t(conv.outputs[0]).name), {p.n * p.dims[0].out, p.oc, h.out, w.out})};
  const int y = c.outputs[0];
  b.out.push_back(std::move(c));
  return y;
}

// A grouped conv with depth taps, on the 5-D form: [N, C, D, H, W] -> [N, D, C, H, W], padded
// along D, the taps gathered to [N, Do, KD, G, Cg, H, W], group-major, as [N*Do, G*KD*Cg, H, W];
// the 2-D conv's output transposed back into the conv's own output tensor.
void lower_grouped(Builder& b, const ir::Node& n, const kernels::VolumeConvParams& p) {
  const kernels::SpatialDim d = p.dims[0], h = p.dims[1], w = p.dims[2];
  const int64_t N = p.n, C = p.ic, G = p.groups, Cg = C / G, KD = d.k;
  b.quant = b.g.t(n.inputs[0]).quant;
  int x = b.transpose(n.inputs[0], {0, 2, 1, 3, 4});
  if (d.pad_begin || d.pad_end) {
    const int pads = b.g.add_const_i64(b.g.fresh_name(n.name + ".pads"), {10},
                                       {0, d.pad_begin, 0, 0, 0, 0, d.pad_end, 0, 0, 0});
    x = b.node(Op::Pad, "pad", {x, pads}, {N, d.in + d.pad_begin + d.pad_end, C, h.in, w.in});
  }
  std::vector<int64_t> idx;
  for (int64_t o = 0; o < d.out; ++o)
    for (int64_t t = 0; t < KD; ++t) idx.push_back(o * d.s + t * d.d);
  x = b.gather(x, idx, {N, d.out * KD, C, h.in, w.in}, 1, false);
  x = b.transpose(b.reshape(x, {N, d.out, KD, G, Cg, h.in, w.in}), {0, 1, 3, 2, 4, 5, 6});
  const int y = conv_2d(b, n, p, b.reshape(x, {N * d.out, KD * C, h.in, w.in}));
  b.transpose(b.reshape(y, {N, d.out, p.oc, h.out, w.out}), {0, 2, 1, 3, 4}, n.outputs[0]);
}

bool f32_activation(const ir::Tensor& t) { return t.dtype == ir::DType::f32 && !t.is_const() && !t.dynamic; }

// Unary element-wise ops that run on any layout (the layout pass's followers).
bool unary_follower(const ir::Graph& g, const ir::Node& n) {
  switch (n.op) {
    case Op::Relu: case Op::LeakyRelu: case Op::Sigmoid: case Op::HardSigmoid: case Op::HardSwish:
    case Op::Tanh: case Op::Neg: case Op::Exp: case Op::Sqrt: case Op::Abs: case Op::Silu:
      return n.inputs.size() == 1;
    case Op::Clip:
      for (std::size_t i = 1; i < n.inputs.size(); ++i)
        if (n.inputs[i] >= 0 && !g.t(n.inputs[i]).is_const()) return false;
      return true;
    default: return false;
  }
}

}  // namespace

Status conv3d_to_conv2d(ir::Graph& g, PassContext&) {
  std::vector<ir::Node> out;
  out.reserve(g.nodes.size());
  std::map<int, Held> held;  // 5-D tensor -> its 4-D form
  std::set<int> made;        // 5-D tensors whose own values exist
  // The 4-D form of a 5-D tensor: [N, C, D, H, W] -> [N, D, H, W, C] (one copy) -> as the
  // NHWC bytes of [N*D, C, H, W] (a view after the layout pass).
  auto hold = [&](Builder& b, int x) -> Held {
    auto it = held.find(x);
    if (it != held.end()) return it->second;
    const ir::Shape s = g.t(x).shape;
    b.quant = g.t(x).quant;
    const int t = b.transpose(x, {0, 2, 3, 4, 1});
    const int r = b.reshape(t, {s[0] * s[2], s[3], s[4], s[1]});
    const int x4 = b.named(volume_held_name(g.t(x).name), {s[0] * s[2], s[1], s[3], s[4]});
    const Held h{b.transpose(r, {0, 3, 1, 2}, x4), s[0], s[1], s[2], s[3], s[4]};
    held[x] = h;
    made.insert(x);
    return h;
  };
  // The 5-D values of held tensors a node reads (or the graph outputs), made where needed.
  auto make = [&](int x) {
    auto it = held.find(x);
    if (it == held.end() || made.count(x)) return;
    const Held& h = it->second;
    Builder b{g, out, g.t(x).name, g.t(h.id4).quant};
    const int t = b.transpose(h.id4, {0, 2, 3, 1});  // a view of the NHWC bytes
    b.transpose(b.reshape(t, {h.n, h.d, h.h, h.w, h.c}), {0, 4, 1, 2, 3}, x);
    made.insert(x);
  };

  // A 3-D pool on the 4-D form of its input (made when needed): see the file comment.
  auto lower_pool = [&](const ir::Node& n) {
    const bool global = n.op == Op::GlobalAveragePool || n.op == Op::GlobalMaxPool;
    const bool max = n.op == Op::MaxPool || n.op == Op::GlobalMaxPool;
    if ((!global && n.op != Op::MaxPool && n.op != Op::AveragePool) || n.inputs.size() != 1 || n.outputs.size() != 1 ||
        n.outputs[0] < 0 || !interp::is_volume(g.t(n.inputs[0]).shape) || !f32_activation(g.t(n.inputs[0])))
      return false;
    kernels::VolumePoolParams p;
    if (!interp::pool_volume_geometry(n, g.t(n.inputs[0]).shape, &p).ok()) return false;
    const kernels::SpatialDim d = p.dims[0], hd = p.dims[1], wd = p.dims[2];
    // The depth taps each output reads; -1 where past the clip.
    std::vector<std::vector<int64_t>> taps(d.k);
    bool past = false;
    for (int64_t t = 0; t < d.k; ++t)
      for (int64_t o = 0; o < d.out; ++o) {
        const int64_t at = o * d.s - d.pad_begin + t * d.d;
        past = past || at < 0 || at >= d.in;
        taps[t].push_back(at < 0 || at >= d.in ? -1 : at);
      }
    // An average whose depth windows are not all whole would need a divisor per output depth; a
    // max window wholly in the padding has no tap to read.
    if (!max && past) return false;
    for (int64_t o = 0; o < d.out; ++o) {
      bool any = false;
      for (int64_t t = 0; t < d.k; ++t) any = any || taps[t][o] >= 0;
      if (!any) return false;
    }
    Builder b{g, out, n.name, g.t(n.inputs[0]).quant};
    const Held x = hold(b, n.inputs[0]);
    int y = x.id4;
    if (global) {  // a 2-D global pool per slice, then over depth: [N, D, C] -> [N, C]
      y = b.node(n.op, "pool2d", {y}, {x.n * x.d, x.c, 1, 1});
      const int r = b.reshape(y, {x.n, x.d, x.c});
      y = b.node(max ? Op::ReduceMax : Op::ReduceMean, "depth", {r}, {x.n, 1, x.c});
      out.back().set_ints("axes", {1});
      b.reshape(y, {x.n, x.c, 1, 1, 1});
      out.back().outputs[0] = n.outputs[0];  // the 5-D result itself
      made.insert(n.outputs[0]);
      return true;
    }
    if (hd.k != 1 || wd.k != 1 || hd.s != 1 || wd.s != 1 || hd.pad_begin || hd.pad_end || wd.pad_begin || wd.pad_end) {
      y = b.node(n.op, "pool2d", {y}, {x.n * x.d, x.c, hd.out, wd.out});
      ir::Node& q = out.back();
      q.attrs = n.attrs;
      q.attrs.erase("auto_pad");
      q.set_ints("kernel_shape", {hd.k, wd.k});
      q.set_ints("strides", {hd.s, wd.s});
      q.set_ints("dilations", {hd.d, wd.d});
      q.set_ints("pads", {hd.pad_begin, wd.pad_begin, hd.pad_end, wd.pad_end});
    }
    const ir::Shape s4 = {x.n * d.out, x.c, hd.out, wd.out};
    std::vector<int> gathered;
    for (int64_t t = 0; t < d.k; ++t) {
      std::vector<int64_t> idx;
      bool identity = d.out == x.d;
      for (int64_t item = 0; item < x.n; ++item)
        for (int64_t o = 0; o < d.out; ++o) {
          int64_t at = taps[t][o];
          for (int64_t u = 0; at < 0 && u < d.k; ++u) at = taps[u][o];  // a tap inside the window
          identity = identity && at == o;
          idx.push_back(item * x.d + at);
        }
      gathered.push_back(identity ? y : b.gather(y, idx, s4, 0, false));
    }
    if (gathered.size() > 1) y = b.node(max ? Op::Max : Op::Mean, "depth", gathered, s4);
    else y = gathered[0];
    // The result's 4-D form, under its held name (calibration and the QDQ export find it); a
    // pool of one position is its input.
    if (y != x.id4) g.t(y).name = volume_held_name(g.t(n.outputs[0]).name);
    held[n.outputs[0]] = Held{y, x.n, x.c, d.out, hd.out, wd.out};
    return true;
  };

  for (ir::Node& n : g.nodes) {
    kernels::VolumeConvParams p;
    const bool conv3d = n.op == Op::Conv && n.inputs.size() >= 2 && n.inputs[0] >= 0 && n.inputs[1] >= 0 &&
                        n.outputs.size() == 1 && interp::is_volume(g.t(n.inputs[0]).shape) &&
                        f32_activation(g.t(n.inputs[0])) && g.t(n.inputs[1]).is_const() &&
                        g.t(n.inputs[1]).dtype == ir::DType::f32 && (n.inputs.size() < 4 || n.inputs[3] < 0) &&
                        interp::conv_volume_geometry(n, g.t(n.inputs[0]).shape, g.t(n.inputs[1]).shape, &p).ok();
    if (conv3d && p.groups > 1 && p.dims[0].k > 1) {
      make(n.inputs[0]);
      Builder b{g, out, n.name};
      lower_grouped(b, n, p);
      continue;
    }
    if (conv3d) {
      Builder b{g, out, n.name};
      const Held x = hold(b, n.inputs[0]);
      b.quant = g.t(x.id4).quant;
      const kernels::SpatialDim d = p.dims[0];
      std::vector<int> taps;
      for (int64_t t = 0; t < d.k; ++t) {
        std::vector<int64_t> idx;
        bool identity = d.out == x.d, pads = false;
        for (int64_t item = 0; item < x.n; ++item)
          for (int64_t o = 0; o < d.out; ++o) {
            const int64_t at = o * d.s - d.pad_begin + t * d.d;
            identity = identity && at == o;
            pads = pads || at < 0 || at >= x.d;
            idx.push_back(at < 0 || at >= x.d ? -1 : item * x.d + at);
          }
        taps.push_back(identity ? x.id4 : b.gather(x.id4, idx, {x.n * d.out, x.c, x.h, x.w}, 0, pads));
      }
      int in2d = taps[0];
      if (taps.size() > 1) {
        in2d = b.node(Op::Concat, "concat", taps, {x.n * d.out, d.k * x.c, x.h, x.w});
        out.back().set_i("axis", 1);
      }
      const int y4 = conv_2d(b, n, p, in2d);
      held[n.outputs[0]] = Held{y4, p.n, p.oc, d.out, p.dims[1].out, p.dims[2].out};
      continue;
    }
    if (lower_pool(n)) continue;
    if (n.op == Op::Concat && n.outputs.size() == 1 && (n.i("axis", 0) == 1 || n.i("axis", 0) == -4)) {
      bool all = !n.inputs.empty();
      int64_t c = 0;
      std::vector<int> ins;
      for (int id : n.inputs) {
        auto it = held.find(id);
        all = all && it != held.end() && g.t(id).shape.size() == 5 && it->second.n == held.at(n.inputs[0]).n &&
              it->second.d == held.at(n.inputs[0]).d && it->second.h == held.at(n.inputs[0]).h &&
              it->second.w == held.at(n.inputs[0]).w;
        if (!all) break;
        c += it->second.c;
        ins.push_back(it->second.id4);
      }
      if (all) {
        const Held h = held.at(n.inputs[0]);
        Builder b{g, out, n.name, g.t(n.outputs[0]).quant};
        ir::Node cat = n;
        cat.inputs = ins;
        cat.set_i("axis", 1);
        cat.outputs = {b.named(volume_held_name(g.t(n.outputs[0]).name), {h.n * h.d, c, h.h, h.w})};
        held[n.outputs[0]] = Held{cat.outputs[0], h.n, c, h.d, h.h, h.w};
        out.push_back(std::move(cat));
        continue;
      }
    }
    // An element-wise op on held values (and constants that broadcast as scalars or per channel)
    // runs on their 4-D forms.
    const bool binary = (n.op == Op::Add || n.op == Op::Sub || n.op == Op::Mul || n.op == Op::Div) && n.inputs.size() == 2;
    if ((binary || unary_follower(g, n)) && n.outputs.size() == 1 && held.count(n.inputs[0]) &&
        g.t(n.outputs[0]).shape == g.t(n.inputs[0]).shape && g.t(n.outputs[0]).dtype == ir::DType::f32) {
      const Held h = held.at(n.inputs[0]);
      bool ok = true;
      std::vector<int> ins = n.inputs;
      ins[0] = h.id4;
      if (binary) {
        const int o = n.inputs[1];
        const ir::Tensor& t = g.t(o);
        if (held.count(o) && t.shape == g.t(n.inputs[0]).shape) {
          ins[1] = held.at(o).id4;
        } else if (t.is_const() && t.numel() == 1) {
        } else if (t.is_const() && t.dtype == ir::DType::f32 && t.numel() == h.c &&
                   (t.shape == ir::Shape{1, h.c, 1, 1, 1} || t.shape == ir::Shape{h.c, 1, 1, 1})) {
          ins[1] = g.add_const(g.fresh_name(t.name + ".4d"), t.dtype, {1, h.c, 1, 1}, *t.data);
        } else {
          ok = false;
        }
      }
      if (ok) {
        Builder b{g, out, n.name, g.t(n.outputs[0]).quant};
        ir::Node e = n;
        e.inputs = ins;
        e.outputs = {b.named(volume_held_name(g.t(n.outputs[0]).name), {h.n * h.d, h.c, h.h, h.w})};
        held[n.outputs[0]] = Held{e.outputs[0], h.n, h.c, h.d, h.h, h.w};
        out.push_back(std::move(e));
        continue;
      }
    }
    for (int id : n.inputs)
      if (id >= 0) make(id);
    out.push_back(std::move(n));
  }
  for (int o : g.outputs) make(o);
  g.nodes = std::move(out);
  return Status::Ok();
}

}  // namespace systolic::passes
