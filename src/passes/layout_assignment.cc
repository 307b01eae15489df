// Layout assignment: convolutions and pools run on NHWC (channels innermost, the order the
// matrix kernels vectorize); element-wise ops, Concat, channel slices and channel shuffles
// follow their inputs; everything else
// and the graph's outputs stay in the plain ONNX order. Reorders are inserted only at the
// boundaries, one per tensor and direction.
#include <map>

#include "interp/nn_geometry.h"
#include "passes/pass.h"
#include "passes/pattern.h"

namespace systolic::passes {
namespace {

using ir::Layout;
using ir::Op;

// A 4-D activation the kernels take in NHWC: float, or 8-bit integers (quantized).
bool is_4d_activation(const ir::Tensor& t) {
  return t.shape.size() == 4 && (t.dtype == ir::DType::f32 || t.dtype == ir::DType::u8 || t.dtype == ir::DType::i8);
}

// QuantizeLinear / DequantizeLinear with one scale and zero point: element-wise.
bool per_tensor_qdq(const ir::Graph& g, const ir::Node& n) {
  if (n.op != Op::QuantizeLinear && n.op != Op::DequantizeLinear) return false;
  for (std::size_t i = 1; i < n.inputs.size(); ++i)
    if (n.inputs[i] >= 0 && (!g.t(n.inputs[i]).is_const() || g.t(n.inputs[i]).numel() != 1)) return false;
  return true;
}

bool nhwc_native(const ir::Graph& g, const ir::Node& n) {
  // A conv reading the uint8 image, and the image's normalisation, take it as stored (NHWC).
  if ((n.op == Op::Conv && n.i("src_u8", 0)) || n.op == Op::NormalizeImage) return true;
  if (!is_4d_activation(g.t(n.inputs[0]))) return false;
  if (n.op == Op::Conv) return g.t(n.inputs[1]).is_const();
  return (n.op == Op::MaxPool && !interp::pool_has_indices(n)) || n.op == Op::AveragePool ||
         n.op == Op::GlobalAveragePool || n.op == Op::GlobalMaxPool;
}

// A [1,C,1,1] or [C,1,1] operand of a 4-D tensor with C channels: one value per channel, laid
// out the same in either order, so it needs no reorder (SE blocks, per-channel scales). So is
// [N,C,1,1], one value per image and channel: a batch's squeeze-excitation gates.
bool per_channel(const ir::Tensor& small, const ir::Tensor& big) {
  if (big.shape.size() != 4 || (small.dtype != ir::DType::f32 && small.dtype != ir::DType::u8) ||
      small.shape == big.shape)
    return false;
  const int64_t c = big.shape[1];
  return small.shape == ir::Shape{1, c, 1, 1} || small.shape == ir::Shape{c, 1, 1} ||
         small.shape == ir::Shape{big.shape[0], c, 1, 1};
}

// A Resize of H and W only (nearest or linear, no crop or antialias) on a float [N,C,H,W]: the
// runtime gives the interpreter the NHWC bytes as [N,H,W,C] with the scales or sizes permuted
// alike, so it resizes in either layout (segmentation and text-detection heads upsample conv
// outputs, which are NHWC).
bool hw_resize(const ir::Graph& g, const ir::Node& n) {
  if (n.op != Op::Resize || n.i("_opset", 13) < 11 || n.has("axes") || n.i("antialias", 0) != 0) return false;
  // A graph output is delivered plain: reorder the (smaller) input rather than the upsampled result.
  if (g.is_graph_output(n.outputs[0])) return false;
  const ir::Tensor& x = g.t(n.inputs[0]);
  if (x.dtype != ir::DType::f32 || x.shape.size() != 4 || n.outputs.size() != 1) return false;
  const std::string mode = n.s("mode", "nearest");
  if ((mode != "nearest" && mode != "linear") || n.s("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize")
    return false;
  const ir::Shape& y = g.t(n.outputs[0]).shape;
  if (y.size() != 4 || y[0] != x.shape[0] || y[1] != x.shape[1]) return false;
  for (std::size_t i = 1; i < n.inputs.size(); ++i)
    if (n.inputs[i] >= 0 && !g.t(n.inputs[i]).is_const()) return false;
  const int scales = n.in(2), sizes = n.in(3);
  const bool by_scales = scales >= 0 && g.t(scales).numel() == 4 && g.t(scales).dtype == ir::DType::f32;
  const bool by_sizes = sizes >= 0 && g.t(sizes).numel() == 4 && g.t(sizes).dtype == ir::DType::i64;
  return by_scales != by_sizes;
}

// A Slice of the channel axis of a 4-D tensor only, with constant bounds and step 1, or a
// Split of the channel axis: on NHWC data the runtime slices the physical last axis
// (ShuffleNet halves its channels in every block).
bool channel_slice(const ir::Graph& g, const ir::Node& n) {
  if (n.inputs.empty() || g.t(n.inputs[0]).shape.size() != 4) return false;
  auto channel_axis = [](int64_t a) { return a == 1 || a == -3; };
  if (n.op == Op::Split) return channel_axis(n.i("axis", 0)) && (n.in(1) < 0 || g.t(n.in(1)).is_const());
  if (n.op != Op::Slice || n.i("_opset", 13) < 10 || n.inputs.size() < 4) return false;
  int64_t start, end, axis, step = 1;
  return int_scalar_const(g, n.inputs[1], &start) && int_scalar_const(g, n.inputs[2], &end) &&
         int_scalar_const(g, n.inputs[3], &axis) && channel_axis(axis) &&
         (n.in(4) < 0 || (int_scalar_const(g, n.in(4), &step) && step == 1));
}

// A Gather of whole items (axis 0 of a 4-D tensor, constant 1-D indices) copies [C,H,W] blocks,
// the same bytes in either order (a 3-D conv's depth taps, passes/conv3d_to_conv2d.cc).
bool item_gather(const ir::Graph& g, const ir::Node& n) {
  if (n.op != Op::Gather || n.inputs.size() != 2 || n.i("axis", 0) != 0) return false;
  const ir::Tensor& idx = g.t(n.inputs[1]);
  return g.t(n.inputs[0]).shape.size() == 4 && idx.is_const() && idx.shape.size() == 1;
}

bool layout_follower(const ir::Graph& g, const ir::Node& n) {
  if (per_tensor_qdq(g, n)) return true;
  if (item_gather(g, n)) return true;
  if (channel_slice(g, n)) return true;
  if (n.op == Op::ChannelShuffle) return g.t(n.inputs[0]).shape.size() == 4;
  if (hw_resize(g, n)) return true;
  switch (n.op) {
    case Op::Relu: case Op::LeakyRelu: case Op::Sigmoid: case Op::HardSigmoid: case Op::HardSwish:
    case Op::Tanh: case Op::Neg: case Op::Exp: case Op::Sqrt: case Op::Abs: case Op::RoundBf16: case Op::Silu:
    case Op::Lut:
      return true;
    case Op::Clip:
      for (int i = 1; i < static_cast<int>(n.inputs.size()); ++i)
        if (n.inputs[i] >= 0 && !g.t(n.inputs[i]).is_const()) return false;
      return true;
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: {
      const ir::Tensor& a = g.t(n.inputs[0]);
      const ir::Tensor& b = g.t(n.inputs[1]);
      const bool commutative = n.op == Op::Add || n.op == Op::Mul;
      return (a.shape == b.shape) || (b.is_const() && b.numel() == 1) || (a.is_const() && a.numel() == 1) ||
             per_channel(b, a) || (commutative && per_channel(a, b));
    }
    case Op::Concat: {
      const int64_t axis = n.i("axis", 0);
      return axis == 1 || axis == -3;
    }
    case Op::Max: case Op::Min: case Op::Mean: case Op::Sum:  // of same-shape tensors (a 3-D pool's taps)
      for (int id : n.inputs)
        if (id < 0 || g.t(id).shape != g.t(n.outputs[0]).shape) return false;
      return true;
    case Op::DepthToSpace:  // DCR on NHWC moves runs of blocksize*C values (runtime/session.cc)
      return n.s("mode", "DCR") == "DCR" && g.t(n.inputs[0]).shape.size() == 4 && n.i("blocksize", 0) > 0;
    default:
      return false;
  }
}

// Activation inputs whose layout matters (not scalars, not weights).
bool is_activation(const ir::Graph& g, const ir::Node& n, std::size_t i) {
  const int id = n.inputs[i];
  if (id < 0) return false;
  const ir::Tensor& t = g.t(id);
  if (n.op == Op::Conv) return i == 0 || i == 3;
  if (n.op == Op::NormalizeImage) return false;  // the image is NHWC whatever the layouts around it
  if (per_tensor_qdq(g, n) || n.op == Op::Resize || n.op == Op::Slice || n.op == Op::Split || item_gather(g, n)) return i == 0;
  if (n.op == Op::Clip && i > 0) return false;
  if ((n.op == Op::Add || n.op == Op::Sub || n.op == Op::Mul || n.op == Op::Div) && n.inputs.size() == 2 &&
      per_channel(t, g.t(n.inputs[1 - i])))
    return false;
  return !(t.is_const() && t.numel() == 1);
}

// A Transpose between NCHW and NHWC orders of a 4-D float or uint8 activation whose bytes are already
// in the wanted order: perm (0,2,3,1) of an NHWC tensor gives the plain [N,H,W,C] it holds,
// perm (0,3,1,2) of a plain [N,H,W,C] gives [N,C,H,W] whose NHWC bytes are the input's
// (ConvNeXt permutes around every LayerNorm). The node becomes a view (attribute nhwc_view):
// the memory plan gives both tensors the same bytes and the step copies nothing.
bool transpose_view(const ir::Graph& g, const ir::Node& n, Layout* out) {
  if (n.op != Op::Transpose || n.inputs.size() != 1 || n.outputs.size() != 1 || n.outputs[0] < 0) return false;
  const ir::Tensor& x = g.t(n.inputs[0]);
  if (x.is_const() || (x.dtype != ir::DType::f32 && x.dtype != ir::DType::u8) || x.shape.size() != 4 ||
      g.is_graph_output(n.outputs[0]))
    return false;
  const std::vector<int64_t> perm = n.ints("perm");
  if (perm == std::vector<int64_t>{0, 2, 3, 1} && x.layout == Layout::nhwc) {
    *out = Layout::plain;
    return true;
  }
  if (perm == std::vector<int64_t>{0, 3, 1, 2} && x.layout == Layout::plain) {
    *out = Layout::nhwc;
    return true;
  }
  return false;
}

}  // namespace

Status layout_assignment(ir::Graph& g, PassContext&) {
  std::vector<ir::Node> out;
  std::map<std::pair<int, Layout>, int> reordered;
  auto get = [&](int id, Layout want) -> int {
    if (g.t(id).layout == want) return id;
    auto key = std::make_pair(id, want);
    auto it = reordered.find(key);
    if (it != reordered.end()) return it->second;
    ir::Tensor t = g.t(id);
    t.data.reset();
    t.name = g.fresh_name(t.name + (want == Layout::nhwc ? ".nhwc" : ".plain"));
    t.layout = want;
    const int nid = g.add_tensor(std::move(t));
    ir::Node r;
    r.op = Op::Reorder;
    r.name = g.t(nid).name;
    r.set_i("to", static_cast<int64_t>(want));
    r.inputs = {id};
    r.outputs = {nid};
    out.push_back(std::move(r));
    reordered[key] = nid;
    return nid;
  };
  for (ir::Node& n : g.nodes) {
    Layout want = Layout::plain;
    if (Layout view; transpose_view(g, n, &view)) {
      g.t(n.outputs[0]).layout = view;
      n.set_i("nhwc_view", 1);
      out.push_back(std::move(n));
      continue;
    }
    if (nhwc_native(g, n)) {
      want = Layout::nhwc;
    } else if (layout_follower(g, n)) {
      bool all = true, any = false;
      for (std::size_t i = 0; i < n.inputs.size(); ++i) {
        if (!is_activation(g, n, i)) continue;
        const ir::Tensor& t = g.t(n.inputs[i]);
        any = true;
        all &= !t.is_const() && t.layout == Layout::nhwc;
      }
      want = any && all ? Layout::nhwc : Layout::plain;
    }
    for (std::size_t i = 0; i < n.inputs.size(); ++i)
      if (is_activation(g, n, i))
        n.inputs[i] = get(n.inputs[i], g.t(n.inputs[i]).shape.size() == 4 ? want : Layout::plain);
    for (int o : n.outputs)
      if (o >= 0) g.t(o).layout = (want == Layout::nhwc && is_4d_activation(g.t(o))) ? Layout::nhwc : Layout::plain;
    if (n.op == Op::NormalizeImage) n.set_i("out_nhwc", 1);
    out.push_back(std::move(n));
  }
  g.nodes = std::move(out);
  // Graph outputs are delivered in the plain order under their own names.
  for (int& o : g.outputs) {
    if (g.t(o).layout == Layout::plain) continue;
    ir::Tensor t = g.t(o);
    t.name = g.fresh_name(t.name + ".nhwc");
    const int inner = g.add_tensor(std::move(t));
    for (ir::Node& n : g.nodes) {
      for (int& in : n.inputs)
        if (in == o) in = inner;
      for (int& out_id : n.outputs)
        if (out_id == o) out_id = inner;
    }
    g.t(o).layout = Layout::plain;
    ir::Node r;
    r.op = Op::Reorder;
    r.name = g.t(o).name + ".to_plain";
    r.set_i("to", 0);
    r.inputs = {inner};
    r.outputs = {o};
    g.nodes.push_back(std::move(r));
  }
  return Status::Ok();
}

}  // namespace systolic::passes
