// Shape inference: output dtype and shape of every node from its inputs (and, for ops whose
// output shape depends on a value, from that value once constant folding made it constant).
#include "interp/eval.h"
#include "interp/nn_geometry.h"
#include "interp/quant_geometry.h"
#include "ir/half.h"
#include "passes/pass.h"

namespace systolic::passes {
namespace {

using ir::DType;
using ir::Op;
using ir::Shape;

int64_t norm_axis(int64_t a, int64_t r) { return a < 0 ? a + r : a; }

interp::TensorRef ref_of(const ir::Tensor& t) {
  return interp::TensorRef{t.dtype, t.shape, t.data ? t.data->data() : nullptr};
}

}  // namespace

Status infer_node(ir::Graph& g, ir::Node& n) {
  const char* op = ir::op_name(n.op);
  auto in_t = [&](std::size_t i) -> const ir::Tensor* {
    int id = n.in(i);
    return id < 0 ? nullptr : &g.t(id);
  };
  // A required input: a missing one (a malformed plan; the importer checks models against
  // ONNX's schema) reads as a placeholder scalar and fails the node after the switch.
  static const ir::Tensor kAbsent = [] {
    ir::Tensor t;
    t.dtype = DType::f32;
    t.shape_known = true;
    return t;
  }();
  int missing = -1;
  auto req = [&](std::size_t i) -> const ir::Tensor* {
    if (const ir::Tensor* t = in_t(i)) return t;
    if (missing < 0) missing = static_cast<int>(i);
    return &kAbsent;
  };
  for (std::size_t i = 0; i < n.inputs.size(); ++i)
    if (n.inputs[i] >= 0 && !g.t(n.inputs[i]).shape_known)
      return Err("%s %s: shape of input %s is unknown", op, n.name.c_str(), g.t(n.inputs[i]).name.c_str());
  if (n.inputs.empty() || !in_t(0)) {
    if (n.op != Op::ConstantOfShape && n.op != Op::Range && !interp::family_infer(n.op))
      return Err("%s %s: missing required input", op, n.name.c_str());
  }
  if (n.outputs.empty()) return Err("%s %s: no outputs", op, n.name.c_str());  // the cases write outs[0]
  auto need_const = [&](std::size_t i, const char* what) -> Status {
    const ir::Tensor* t = in_t(i);
    if (!t) return Err("%s %s: %s input is missing", op, n.name.c_str(), what);
    if (!t->is_const())
      return Err("%s %s: %s input %s must be constant (computed at run time is not supported)", op,
                 n.name.c_str(), what, t->name.c_str());
    return Status::Ok();
  };
  auto ints_of = [&](std::size_t i) { return interp::read_ints(ref_of(*in_t(i))); };
  const ir::Tensor* x = in_t(0);
  Shape xs = x ? x->shape : Shape{};
  const int64_t r = static_cast<int64_t>(xs.size());
  DType dt = x ? x->dtype : DType::f32;
  std::vector<Shape> outs(n.outputs.size(), xs);
  std::vector<DType> dts(n.outputs.size(), dt);

  switch (n.op) {
    case Op::Relu: case Op::LeakyRelu: case Op::Sigmoid: case Op::HardSigmoid: case Op::HardSwish:
    case Op::Tanh: case Op::Neg: case Op::Exp: case Op::Sqrt: case Op::Abs: case Op::Identity:
    case Op::Clip: case Op::Softmax: case Op::LRN: case Op::BatchNormalization: case Op::Reorder: case Op::Round:
    case Op::RoundBf16: case Op::Silu: case Op::Lut:
      if (n.op == Op::Round && dt != DType::f32 && dt != DType::f64)
        return Err("Round %s: element type %s is not supported (float32 or float64)", n.name.c_str(),
                   ir::dtype_name(dt));
      if (n.op == Op::RoundBf16 && dt != DType::f32)
        return Err("RoundBf16 %s: element type %s is not supported (float32)", n.name.c_str(), ir::dtype_name(dt));
      if (n.op == Op::LRN && r < 3) return Err("LRN %s: input must have rank >= 3", n.name.c_str());
      if (n.op == Op::Softmax && (norm_axis(n.i("axis", -1), r) < 0 || norm_axis(n.i("axis", -1), r) >= r))
        return Err("Softmax %s: axis out of range", n.name.c_str());
      if (n.op == Op::BatchNormalization) {
        if (n.inputs.size() < 5) return Err("BatchNormalization %s needs 5 inputs", n.name.c_str());
        if (n.outputs.size() > 1) {
          for (std::size_t k = 1; k < n.outputs.size(); ++k)
            if (n.outputs[k] >= 0) return Err("BatchNormalization %s: training mode outputs are not supported", n.name.c_str());
        }
        if (n.i("training_mode", 0)) return Err("BatchNormalization %s: training mode is not supported", n.name.c_str());
      }
      break;
    case Op::ChannelShuffle:
      // One input, or one per group (a Concat absorbed): the output joins them on axis 1.
      if (r < 2 || n.i("group", 0) < 1 || (n.inputs.size() != 1 && static_cast<int64_t>(n.inputs.size()) != n.i("group", 0)))
        return Err("ChannelShuffle %s: needs rank >= 2 and one input or one per group", n.name.c_str());
      outs[0][1] = xs[1] * static_cast<int64_t>(n.inputs.size());
      if (outs[0][1] % n.i("group", 0) != 0)
        return Err("ChannelShuffle %s: group does not divide the channels", n.name.c_str());
      break;
    case Op::Dropout:
      if (n.inputs.size() > 2 && in_t(2)) {
        SYSTOLIC_RETURN_IF_ERROR(need_const(2, "training_mode"));
        // Training mode with ratio 0 (exporters emit it for disabled dropout) is the identity.
        const bool ratio0 = in_t(1) && req(1)->is_const() && interp::read_scalar(ref_of(*in_t(1))) == 0;
        if (interp::read_scalar(ref_of(*in_t(2))) != 0 && !ratio0)
          return Err("Dropout %s: training mode is not supported (inference only)", n.name.c_str());
      }
      if (outs.size() > 1) dts[1] = DType::boolean;
      break;
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::PRelu: case Op::Equal: {
      if (!in_t(1)) return Err("%s %s: missing second input", op, n.name.c_str());
      if (req(1)->dtype != dt) return Err("%s %s: operand types %s and %s differ", op, n.name.c_str(),
                                           ir::dtype_name(dt), ir::dtype_name(req(1)->dtype));
      // Before opset 7 a 1-D PRelu slope applies along the channel axis.
      if (n.op == Op::PRelu && g.opset < 7 && req(1)->is_const() && req(1)->shape.size() == 1 && r > 2 &&
          req(1)->shape[0] == xs[1] && !interp::broadcast_shapes(xs, req(1)->shape).ok()) {
        Shape cs(r - 1, 1);
        cs[0] = xs[1];
        g.t(n.inputs[1]).shape = cs;
      }
      auto b = interp::broadcast_shapes(xs, req(1)->shape);
      if (!b.ok()) return Err("%s %s: %s", op, n.name.c_str(), b.status().message().c_str());
      if (n.op == Op::PRelu && *b != xs) return Err("PRelu %s: slope does not broadcast to the input", n.name.c_str());
      outs[0] = *b;
      if (n.op == Op::Equal) dts[0] = DType::boolean;
      break;
    }
    case Op::Where: {
      auto b = interp::broadcast_shapes(xs, req(1)->shape);
      if (!b.ok()) return b.status();
      auto c = interp::broadcast_shapes(*b, req(2)->shape);
      if (!c.ok()) return c.status();
      outs[0] = *c;
      dts[0] = req(1)->dtype;
      break;
    }
    case Op::Cast: {
      DType to = static_cast<DType>(n.i("to", 1));
      if (!ir::dtype_storable(to)) return Err("Cast %s: target type %s is not supported", n.name.c_str(), ir::dtype_name(to));
      dts[0] = to;
      break;
    }
    case Op::Conv: {
      if (!in_t(1)) return Err("Conv %s: missing weight", n.name.c_str());
      if (interp::is_volume(xs)) {
        kernels::VolumeConvParams p;
        SYSTOLIC_RETURN_IF_ERROR(interp::conv_volume_geometry(n, xs, req(1)->shape, &p));
        const DType wt = req(1)->dtype, bt = in_t(2) ? req(2)->dtype : DType::f32;
        if (dt != DType::f32 || wt != DType::f32 || bt != DType::f32)
          return Err("Conv %s: input, weight and bias are %s, %s and %s; float32 is supported", n.name.c_str(),
                     ir::dtype_name(dt), ir::dtype_name(wt), ir::dtype_name(bt));
        if (in_t(2) && (req(2)->shape.size() != 1 || req(2)->shape[0] != p.oc))
          return Err("Conv %s: bias shape %s does not match %lld output channels", n.name.c_str(),
                     ir::shape_str(req(2)->shape).c_str(), static_cast<long long>(p.oc));
        outs[0] = {xs[0], p.oc};
        for (const auto& d : p.dims) outs[0].push_back(d.out);
        break;
      }
      kernels::ConvParams p;
      SYSTOLIC_RETURN_IF_ERROR(interp::conv_geometry(n, xs, req(1)->shape, &p));
      // The conv kernels and packing read float32 weights and bias, and a float32 input (or the
      // uint8 image a folded normalization left).
      const DType wt = req(1)->dtype, bt = in_t(2) ? req(2)->dtype : DType::f32;
      if (wt != DType::f32 || bt != DType::f32 || (dt != DType::f32 && !(p.src_u8 && dt == DType::u8)))
        return Err("Conv %s: input, weight and bias are %s, %s and %s; float32 is supported", n.name.c_str(),
                   ir::dtype_name(dt), ir::dtype_name(wt), ir::dtype_name(bt));
      if (in_t(2) && (req(2)->shape.size() != 1 || req(2)->shape[0] != p.oc))
        return Err("Conv %s: bias shape %s does not match %d output channels", n.name.c_str(),
                   ir::shape_str(req(2)->shape).c_str(), p.oc);
      outs[0] = r == 3 ? Shape{xs[0], p.oc, p.ow} : Shape{xs[0], p.oc, p.oh, p.ow};
      if (p.src_u8) dts[0] = DType::f32;
      break;
    }
    case Op::NormalizeImage: {
      const auto mean = n.has("mean") ? n.attrs.at("mean").floats_v : std::vector<float>{};
      const auto std = n.has("std") ? n.attrs.at("std").floats_v : std::vector<float>{};
      if (dt != DType::u8 || r != 4 || mean.size() != static_cast<std::size_t>(xs[1]) || std.size() != mean.size())
        return Err("NormalizeImage %s: needs a uint8 [N,C,H,W] image and C mean and std values", n.name.c_str());
      dts[0] = DType::f32;
      break;
    }
    case Op::MaxPool: case Op::AveragePool: case Op::GlobalAveragePool: case Op::GlobalMaxPool: {
      if (interp::is_volume(xs)) {
        kernels::VolumePoolParams p;
        SYSTOLIC_RETURN_IF_ERROR(interp::pool_volume_geometry(n, xs, &p));
        if (dt != DType::f32) return Err("%s %s: a 3-D pool takes float32, not %s", ir::op_name(n.op), n.name.c_str(), ir::dtype_name(dt));
        outs[0] = {xs[0], xs[1]};
        for (const auto& d : p.dims) outs[0].push_back(d.out);
        break;
      }
      kernels::PoolParams p;
      SYSTOLIC_RETURN_IF_ERROR(interp::pool_geometry(n, xs, &p));
      outs[0] = r == 3 ? Shape{xs[0], xs[1], p.ow} : Shape{xs[0], xs[1], p.oh, p.ow};
      if (interp::pool_has_indices(n)) {
        if (dt != DType::f32)
          return Err("MaxPool %s: an Indices output needs a float32 input, not %s", n.name.c_str(), ir::dtype_name(dt));
        outs[1] = outs[0];
        dts[1] = DType::i64;
      }
      break;
    }
    case Op::Gemm: {
      const Shape& bs = req(1)->shape;
      if (xs.size() != 2 || bs.size() != 2) return Err("Gemm %s: inputs must be 2-D", n.name.c_str());
      const int64_t M = n.i("transA", 0) ? xs[1] : xs[0], K = n.i("transA", 0) ? xs[0] : xs[1];
      const int64_t K2 = n.i("transB", 0) ? bs[1] : bs[0], N = n.i("transB", 0) ? bs[0] : bs[1];
      if (K != K2) return Err("Gemm %s: inner dimensions %lld and %lld differ", n.name.c_str(),
                              static_cast<long long>(K), static_cast<long long>(K2));
      outs[0] = {M, N};
      if (in_t(2) && !interp::broadcast_shapes(req(2)->shape, outs[0]).ok())
        return Err("Gemm %s: C does not broadcast to [M,N]", n.name.c_str());
      break;
    }
    case Op::MatMul: {
      Shape a = xs, b = req(1)->shape;
      if (a.empty() || b.empty()) return Err("MatMul %s: scalar operands", n.name.c_str());
      const bool a1 = a.size() == 1, b1 = b.size() == 1;
      if (a1) a.insert(a.begin(), 1);
      if (b1) b.push_back(1);
      if (a.back() != b[b.size() - 2]) return Err("MatMul %s: inner dimensions of %s and %s differ", n.name.c_str(),
                                                  ir::shape_str(xs).c_str(), ir::shape_str(req(1)->shape).c_str());
      auto batch = interp::broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
      if (!batch.ok()) return batch.status();
      Shape o = *batch;
      if (!a1) o.push_back(a[a.size() - 2]);
      if (!b1) o.push_back(b.back());
      outs[0] = o;
      break;
    }
    case Op::Flatten: {
      int64_t axis = norm_axis(n.i("axis", 1), r);
      if (axis < 0 || axis > r) return Err("Flatten %s: axis out of range", n.name.c_str());
      int64_t a = 1, b = 1;
      for (int64_t d = 0; d < r; ++d) (d < axis ? a : b) *= xs[d];
      outs[0] = {a, b};
      break;
    }
    case Op::Reshape: {
      SYSTOLIC_RETURN_IF_ERROR(need_const(1, "shape"));
      Shape s = ints_of(1);
      const bool allowzero = n.i("allowzero", 0);
      int64_t known = 1, infer = -1;
      for (std::size_t d = 0; d < s.size(); ++d) {
        if (s[d] == 0 && !allowzero) {
          if (d >= xs.size()) return Err("Reshape %s: 0 refers to a missing input dim", n.name.c_str());
          s[d] = xs[d];
        }
        if (s[d] == -1) {
          if (infer >= 0) return Err("Reshape %s: more than one -1", n.name.c_str());
          infer = static_cast<int64_t>(d);
        } else if (s[d] < 0) {
          return Err("Reshape %s: invalid dim %lld", n.name.c_str(), static_cast<long long>(s[d]));
        } else if (__builtin_mul_overflow(known, s[d], &known)) {
          return Err("Reshape %s: shape %s overflows", n.name.c_str(), ir::shape_str(s).c_str());
        }
      }
      if (infer >= 0) s[infer] = known ? ir::num_elements(xs) / known : 0;
      if (ir::num_elements(s) != ir::num_elements(xs))
        return Err("Reshape %s: cannot reshape %s to %s", n.name.c_str(), ir::shape_str(xs).c_str(), ir::shape_str(s).c_str());
      outs[0] = s;
      break;
    }
    case Op::Transpose: {
      auto perm = n.ints("perm");
      if (perm.empty())
        for (int64_t d = r - 1; d >= 0; --d) perm.push_back(d);
      if (static_cast<int64_t>(perm.size()) != r) return Err("Transpose %s: perm has the wrong length", n.name.c_str());
      Shape o(r);
      std::vector<char> used(r, 0);
      for (int64_t d = 0; d < r; ++d) {
        if (perm[d] < 0 || perm[d] >= r || used[perm[d]]) return Err("Transpose %s: perm is not a permutation", n.name.c_str());
        used[perm[d]] = 1;
        o[d] = xs[perm[d]];
      }
      outs[0] = o;
      break;
    }
    case Op::Squeeze: {
      std::vector<int64_t> axes;
      if (in_t(1)) {
        SYSTOLIC_RETURN_IF_ERROR(need_const(1, "axes"));
        axes = ints_of(1);
      }
      std::vector<char> drop(r, 0);
      for (int64_t a : axes) {
        a = norm_axis(a, r);
        if (a < 0 || a >= r || xs[a] != 1) return Err("Squeeze %s: axis %lld is not a dim of size 1", n.name.c_str(),
                                                      static_cast<long long>(a));
        drop[a] = 1;
      }
      Shape o;
      for (int64_t d = 0; d < r; ++d)
        if (!(axes.empty() ? xs[d] == 1 : drop[d])) o.push_back(xs[d]);
      outs[0] = o;
      break;
    }
    case Op::Unsqueeze: {
      SYSTOLIC_RETURN_IF_ERROR(need_const(1, "axes"));
      auto axes = ints_of(1);
      const int64_t ro = r + static_cast<int64_t>(axes.size());
      std::vector<char> ins(ro, 0);
      for (int64_t a : axes) {
        a = norm_axis(a, ro);
        if (a < 0 || a >= ro || ins[a]) return Err("Unsqueeze %s: bad axes", n.name.c_str());
        ins[a] = 1;
      }
      Shape o;
      std::size_t k = 0;
      for (int64_t d = 0; d < ro; ++d) o.push_back(ins[d] ? 1 : xs[k++]);
      outs[0] = o;
      break;
    }
    case Op::Concat: {
      const int64_t axis = norm_axis(n.i("axis", 0), r);
      if (axis < 0 || axis >= r) return Err("Concat %s: axis out of range", n.name.c_str());
      Shape o = xs;
      o[axis] = 0;
      for (std::size_t i = 0; i < n.inputs.size(); ++i) {
        const ir::Tensor* t = in_t(i);
        if (!t) continue;
        if (t->shape.size() != xs.size()) return Err("Concat %s: inputs differ in rank", n.name.c_str());
        for (int64_t d = 0; d < r; ++d)
          if (d != axis && t->shape[d] != xs[d])
            return Err("Concat %s: input %s has shape %s, expected %s off the axis", n.name.c_str(), t->name.c_str(),
                       ir::shape_str(t->shape).c_str(), ir::shape_str(xs).c_str());
        o[axis] += t->shape[axis];
      }
      outs[0] = o;
      break;
    }
    case Op::Split: {
      const int64_t axis = norm_axis(n.i("axis", 0), r);
      if (axis < 0 || axis >= r) return Err("Split %s: axis out of range", n.name.c_str());
      std::vector<int64_t> split;
      if (in_t(1)) {
        SYSTOLIC_RETURN_IF_ERROR(need_const(1, "split"));
        split = ints_of(1);
      }
      const int64_t k = static_cast<int64_t>(n.outputs.size());
      if (split.empty()) {
        const int64_t chunk = (xs[axis] + k - 1) / k;
        for (int64_t i = 0; i < k; ++i) split.push_back(std::max<int64_t>(0, std::min(chunk, xs[axis] - i * chunk)));
      }
      int64_t sum = 0;
      for (int64_t v : split)
        if (v < 0 || v > xs[axis] || (sum += v) > xs[axis])
          return Err("Split %s: split sizes must be >= 0 and add up to dim %lld", n.name.c_str(),
                     static_cast<long long>(xs[axis]));
      if (static_cast<int64_t>(split.size()) != k || sum != xs[axis])
        return Err("Split %s: split sizes do not add up to dim %lld", n.name.c_str(), static_cast<long long>(xs[axis]));
      for (int64_t i = 0; i < k; ++i) outs[i][axis] = split[i];
      break;
    }
    case Op::Slice: {
      SYSTOLIC_RETURN_IF_ERROR(need_const(1, "starts"));
      SYSTOLIC_RETURN_IF_ERROR(need_const(2, "ends"));
      for (std::size_t i = 3; i < n.inputs.size(); ++i)
        if (in_t(i)) SYSTOLIC_RETURN_IF_ERROR(need_const(i, "axes/steps"));
      std::vector<int64_t> st, step;
      Shape o;
      SYSTOLIC_RETURN_IF_ERROR(interp::slice_plan(xs, ints_of(1), ints_of(2), in_t(3) ? ints_of(3) : std::vector<int64_t>{},
                                                  in_t(4) ? ints_of(4) : std::vector<int64_t>{}, &st, &step, &o));
      outs[0] = o;
      break;
    }
    case Op::Pad: {
      SYSTOLIC_RETURN_IF_ERROR(need_const(1, "pads"));
      if (in_t(3)) return Err("Pad %s: the axes input is not supported", n.name.c_str());
      auto pads = ints_of(1);
      if (static_cast<int64_t>(pads.size()) != 2 * r) return Err("Pad %s: pads must have 2*rank values", n.name.c_str());
      const std::string mode = n.s("mode", "constant");
      if (mode != "constant" && mode != "reflect" && mode != "edge")
        return Err("Pad %s: mode %s is not supported", n.name.c_str(), mode.c_str());
      for (int64_t d = 0; d < r; ++d) {
        if (pads[d] < 0 || pads[d + r] < 0) return Err("Pad %s: negative pads are not supported", n.name.c_str());
        if (pads[d] > ir::kMaxElements || pads[d + r] > ir::kMaxElements)
          return Err("Pad %s: pads past 2^36", n.name.c_str());
        outs[0][d] = xs[d] + pads[d] + pads[d + r];
        if (mode != "constant" && xs[d] == 0 && outs[0][d] > 0) return Err("Pad %s: cannot %s-pad an empty dim", n.name.c_str(), mode.c_str());
      }
      break;
    }
    case Op::Shape: {
      int64_t s = n.i("start", 0), e = n.i("end", r);
      if (s < 0) s += r;
      if (e < 0) e += r;
      s = std::clamp<int64_t>(s, 0, r);
      e = std::clamp<int64_t>(e, 0, r);
      outs[0] = {std::max<int64_t>(0, e - s)};
      dts[0] = DType::i64;
      break;
    }
    case Op::Gather: {
      const int64_t axis = norm_axis(n.i("axis", 0), r);
      if (axis < 0 || axis >= r) return Err("Gather %s: axis out of range", n.name.c_str());
      if (!in_t(1)) return Err("Gather %s: indices input is missing", n.name.c_str());
      const Shape& is = req(1)->shape;
      if (req(1)->is_const())
        for (int64_t i : ints_of(1))
          if (i < -xs[axis] || i >= xs[axis])
            return Err("Gather %s: index %lld is out of range for dim %lld", n.name.c_str(), static_cast<long long>(i),
                       static_cast<long long>(xs[axis]));
      Shape o(xs.begin(), xs.begin() + axis);
      o.insert(o.end(), is.begin(), is.end());
      o.insert(o.end(), xs.begin() + axis + 1, xs.end());
      outs[0] = o;
      break;
    }
    case Op::ConstantOfShape: {
      SYSTOLIC_RETURN_IF_ERROR(need_const(0, "shape"));
      outs[0] = ints_of(0);
      auto it = n.attrs.find("value");
      dts[0] = (it != n.attrs.end() && it->second.tensor_v) ? it->second.tensor_v->dtype : DType::f32;
      break;
    }
    case Op::Expand: {
      SYSTOLIC_RETURN_IF_ERROR(need_const(1, "shape"));
      auto b = interp::broadcast_shapes(xs, ints_of(1));
      if (!b.ok()) return Err("Expand %s: %s", n.name.c_str(), b.status().message().c_str());
      outs[0] = *b;
      break;
    }
    case Op::Range: {
      for (std::size_t i = 0; i < 3; ++i) SYSTOLIC_RETURN_IF_ERROR(need_const(i, "start/limit/delta"));
      const double s = interp::read_scalar(ref_of(*in_t(0))), l = interp::read_scalar(ref_of(*in_t(1))),
                   d = interp::read_scalar(ref_of(*in_t(2)));
      if (d == 0) return Err("Range %s: delta is 0", n.name.c_str());
      outs[0] = {std::max<int64_t>(0, static_cast<int64_t>(std::ceil((l - s) / d)))};
      dts[0] = req(0)->dtype;
      break;
    }
    case Op::ArgMax: case Op::ArgMin: {
      const int64_t axis = norm_axis(n.i("axis", 0), r);
      if (axis < 0 || axis >= (r == 0 ? 1 : r)) return Err("%s %s: axis out of range", op, n.name.c_str());
      if (r > 0) {
        if (n.i("keepdims", 1)) outs[0][axis] = 1;
        else outs[0].erase(outs[0].begin() + axis);
      }
      dts[0] = DType::i64;
      break;
    }
    case Op::ReduceMean: case Op::ReduceMin: case Op::ReduceMax: case Op::ReduceSum: case Op::ReduceProd:
    case Op::ReduceL1: case Op::ReduceL2: case Op::ReduceLogSum: case Op::ReduceLogSumExp: case Op::ReduceSumSquare: {
      std::vector<int64_t> axes = n.ints("axes");
      if (n.i("axes_as_input", 0)) {
        axes.clear();
        if (in_t(1)) {
          SYSTOLIC_RETURN_IF_ERROR(need_const(1, "axes"));
          axes = ints_of(1);
        }
      }
      std::vector<char> red;
      SYSTOLIC_RETURN_IF_ERROR(interp::reduce_dims(n, r, axes, &red));
      outs[0] = interp::reduced_shape(xs, red, n.i("keepdims", 1) != 0);
      break;
    }
    case Op::Min: case Op::Max: {
      Shape o = xs;
      for (std::size_t i = 1; i < n.inputs.size(); ++i) {
        const ir::Tensor* t = in_t(i);
        if (!t) return Err("%s %s: input %zu is missing", op, n.name.c_str(), i);
        if (t->dtype != dt) return Err("%s %s: operand types %s and %s differ", op, n.name.c_str(),
                                       ir::dtype_name(dt), ir::dtype_name(t->dtype));
        auto b = interp::broadcast_shapes(o, t->shape);
        if (!b.ok()) return Err("%s %s: %s", op, n.name.c_str(), b.status().message().c_str());
        o = *b;
      }
      outs[0] = o;
      break;
    }
    case Op::QuantizeLinear: case Op::DequantizeLinear: case Op::DynamicQuantizeLinear: case Op::QLinearConv:
    case Op::QLinearMatMul: case Op::ConvInteger: case Op::MatMulInteger: {
      std::vector<interp::TensorRef> ins;
      for (std::size_t i = 0; i < n.inputs.size(); ++i) ins.push_back(in_t(i) ? ref_of(*in_t(i)) : interp::TensorRef{});
      std::vector<Shape> shapes;
      std::vector<DType> types;
      SYSTOLIC_RETURN_IF_ERROR(interp::infer_quant(n, ins, &shapes, &types));
      if (n.outputs.size() > shapes.size())
        return Err("%s %s has %zu outputs; it has at most %zu", op, n.name.c_str(), n.outputs.size(), shapes.size());
      for (std::size_t k = 0; k < n.outputs.size(); ++k) {
        outs[k] = shapes[k];
        dts[k] = types[k];
      }
      break;
    }
    default: {
      const interp::InferFn family = interp::family_infer(n.op);
      if (!family) break;
      std::vector<interp::TensorRef> ins;
      for (std::size_t i = 0; i < n.inputs.size(); ++i) ins.push_back(in_t(i) ? ref_of(*in_t(i)) : interp::TensorRef{});
      std::vector<Shape> shapes;
      std::vector<DType> types;
      SYSTOLIC_RETURN_IF_ERROR(family(n, ins, &shapes, &types));
      if (n.outputs.size() > shapes.size() || types.size() != shapes.size())
        return Err("%s %s has %zu outputs; it has at most %zu", op, n.name.c_str(), n.outputs.size(), shapes.size());
      for (std::size_t k = 0; k < n.outputs.size(); ++k) {
        outs[k] = shapes[k];
        dts[k] = types[k];
      }
      break;
    }
  }
  if (missing >= 0) return Err("%s %s: required input %d is missing", op, n.name.c_str(), missing);
  for (std::size_t k = 0; k < n.outputs.size(); ++k) {
    if (n.outputs[k] < 0) continue;
    // Tensors past ir::kMaxElements are a malformed model, not a workload (and would overflow).
    for (int64_t d : outs[k])
      if (d < 0) return Err("%s %s: negative output dimension", op, n.name.c_str());
    if (ir::checked_num_elements(outs[k]) < 0)
      return Err("%s %s: output shape %s has more than 2^36 elements", op, n.name.c_str(),
                 ir::shape_str(outs[k]).c_str());
    ir::Tensor& t = g.t(n.outputs[k]);
    t.shape = outs[k];
    t.dtype = dts[k];
    t.shape_known = true;
  }
  return Status::Ok();
}

Status bind_input_shapes(ir::Graph& g, PassContext& ctx) {
  for (const auto& [name, shape] : ctx.input_shapes) {
    bool found = false;
    for (int id : g.inputs) found = found || g.t(id).name == name;
    if (!found) {
      std::string names;
      for (int id : g.inputs) names += (names.empty() ? "" : ", ") + g.t(id).name;
      return Err("the model has no input named '%s' (inputs: %s)", name.c_str(), names.c_str());
    }
  }
  // A batch above 1 binds a symbolic leading dimension; a model with none cannot honour it,
  // and a plan labelled with a batch its tensors do not have would mislead every caller.
  bool batch_bound = !ctx.input_shapes.empty();
  std::string fixed;
  for (int id : g.inputs) {
    const ir::Tensor& t = g.t(id);
    if (t.shape_known && !t.shape.empty() && (t.shape[0] < 0 || t.shape[0] == ctx.batch)) batch_bound = true;
    else if (fixed.empty() && t.shape_known) fixed = t.name + " is " + ir::shape_str(t.shape);
  }
  if (ctx.batch > 1 && !batch_bound && !g.inputs.empty())
    return Err("the model's batch dimension is fixed (input %s): it cannot be compiled for batch %lld; export it "
               "with a dynamic batch axis", fixed.c_str(), static_cast<long long>(ctx.batch));
  for (int id : g.inputs) {
    ir::Tensor& t = g.t(id);
    auto given = ctx.input_shapes.find(t.name);
    if (given != ctx.input_shapes.end()) {
      const ir::Shape& s = given->second;
      if (t.shape_known && s.size() != t.shape.size())
        return Err("input %s: the model gives it rank %zu (%s), the shape given is %s", t.name.c_str(), t.shape.size(),
                   ir::shape_str(t.shape).c_str(), ir::shape_str(s).c_str());
      for (std::size_t d = 0; d < s.size(); ++d) {
        if (s[d] <= 0) return Err("input %s: dimension %zu of the shape given must be positive", t.name.c_str(), d);
        if (t.shape_known && t.shape[d] >= 0 && t.shape[d] != s[d])
          return Err("input %s: dimension %zu is %lld in the model, the shape given says %lld", t.name.c_str(), d,
                     static_cast<long long>(t.shape[d]), static_cast<long long>(s[d]));
      }
      t.shape = s;
      t.shape_known = true;
      continue;
    }
    if (!t.shape_known) return Err("input %s has no shape in the model; give one with --shape %s=...", t.name.c_str(),
                                   t.name.c_str());
    for (std::size_t d = 0; d < t.shape.size(); ++d) {
      if (t.shape[d] >= 0) continue;
      if (d == 0) {
        t.shape[d] = ctx.batch;
        continue;
      }
      std::string dims;
      for (std::size_t k = 0; k < t.shape.size(); ++k)
        dims += (k ? "x" : "") + (k == 0 && t.shape[0] < 0 ? std::to_string(ctx.batch)
                                  : t.shape[k] < 0 ? std::string("?") : std::to_string(t.shape[k]));
      return Err("input %s has a symbolic dimension %zu; bind it with --shape %s=%s", t.name.c_str(), d,
                 t.name.c_str(), dims.c_str());
    }
  }
  for (int id : g.inputs)
    if (ir::checked_num_elements(g.t(id).shape) < 0)
      return Err("input %s: shape %s has more than 2^36 elements", g.t(id).name.c_str(),
                 ir::shape_str(g.t(id).shape).c_str());
  return Status::Ok();
}

Status shape_inference(ir::Graph& g, PassContext&) {
  for (ir::Node& n : g.nodes) {
    if (dynamic_node(g, n)) mark_dynamic(g, n);  // shaped at run time (split_dynamic)
    else SYSTOLIC_RETURN_IF_ERROR(infer_node(g, n));
  }
  return Status::Ok();
}

}  // namespace systolic::passes
