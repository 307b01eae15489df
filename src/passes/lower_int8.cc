// int8 lowering: every convolution whose input is quantized (annotated by a QDQ model or by
// calibration) becomes an int8 convolution: symmetric int8 weights per output channel, an
// int32 bias with the input zero point folded in, and the requantization to its output's
// uint8 parameters (or the dequantization to float, when no integer consumer follows) in the
// kernel's epilogue. Pools over uint8 stay uint8, reshapes pass uint8 through, tables
// (int8_tables), Adds, channel Concats and squeeze-excitation gate Muls run on uint8, and where a
// float op meets a uint8 tensor (or the reverse) one Dequantize (Quantize) node per tensor is
// inserted. An image plan's uint8 input feeds the int8 stem directly: its per-channel offsets
// become the zero points, its scale is in the weights.
//
// An int8 Conv: inputs (x u8, w i8 OIHW, bias i32, [residual]); attrs q_scale[oc], q_pad[ic],
// q_zp, q_lo, q_hi, q_res_scale, q_res_zp, q_out_f32 (kernels/qconv/qconv.h has the math);
// fuse_lut adds q_table.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <set>

#include "kernels/epilogue.h"
#include "kernels/qconv/qconv.h"
#include "passes/pass.h"

namespace systolic::passes {
namespace {

using ir::DType;
using ir::Op;

// A pool the int8 kernels run: 2-D (NHWC); 1-D and 3-D pools are float-only interpreter steps.
bool is_pool(const ir::Graph& g, const ir::Node& n) {
  const Op op = n.op;
  return (op == Op::MaxPool || op == Op::GlobalMaxPool || op == Op::AveragePool || op == Op::GlobalAveragePool) &&
         !n.inputs.empty() && n.inputs[0] >= 0 && g.t(n.inputs[0]).shape.size() == 4;
}

// Ops whose output holds input 0's values (moved, or a subset): uint8 in, uint8 out, the same
// quantization. ShuffleNet's channel shuffle and channel halving (a Slice with constant bounds);
// a video model's transposes into 4-D form and depth-tap Gathers (passes/conv3d_to_conv2d.cc;
// a zero-filled tap fills with the zero point).
bool is_passthrough(const ir::Graph& g, const ir::Node& n) {
  const Op op = n.op;
  if (op == Op::ChannelShuffle || op == Op::Transpose) return n.inputs.size() == 1;
  if (op == Op::Gather) return n.inputs.size() == 2 && g.t(n.inputs[1]).is_const();
  if (op == Op::Slice) {
    for (std::size_t i = 1; i < n.inputs.size(); ++i)
      if (n.inputs[i] >= 0 && !g.t(n.inputs[i]).is_const()) return false;
    return !n.inputs.empty();
  }
  return op == Op::Reshape || op == Op::Flatten || op == Op::Squeeze || op == Op::Unsqueeze || op == Op::Identity ||
         op == Op::Dropout;
}

struct Lowering {
  ir::Graph& g;
  PassContext& ctx;
  std::vector<std::vector<int>> consumers;
  std::vector<ir::Node> nodes;  // the graph's, being lowered in order into `out`
  std::vector<ir::Node> out;
  std::map<int, int> u8_of, f32_of;  // conversions inserted, one per tensor and direction
  std::vector<char> lowered;         // tensors this pass made uint8
  std::set<int> rounded;             // float tensors a QDQ model quantizes: read through their uint8 form
  std::set<const ir::Node*> skip;    // explicit QuantizeLinear nodes a conv took over
  int convs = 0, pools = 0, eltwise = 0, tables = 0;

  bool quantized(int t) const { return t >= 0 && g.t(t).quant.per_tensor() && g.t(t).quant.qtype == DType::u8; }
  bool is_u8(int t) const { return t >= 0 && t < static_cast<int>(lowered.size()) && lowered[t]; }

  void note(const ir::Node& n, const std::string& why) {
    ctx.log += "lower_int8: " + std::string(ir::op_name(n.op)) + " " + n.name + " stays float: " + why + "\n";
  }

  // Why a conv cannot be int8 ("" if it can); `input_q`: its input will be quantized.
  std::string conv_blocker(const ir::Node& n, bool input_q = false) const {
    if (ctx.keep_fp32.count(n.name)) return "kept in float (--keep-fp32)";
    const int w = n.in(1);
    if (w < 0 || !g.t(w).is_const() || g.t(w).dtype != DType::f32 || g.t(w).shape.size() != 4)
      return "weights are not a constant 4-D float tensor";
    if (n.in(2) >= 0 && (!g.t(n.in(2)).is_const() || g.t(n.in(2)).dtype != DType::f32))
      return "bias is not a constant float tensor";
    if (!n.i("src_u8", 0) && !input_q && !quantized(n.inputs[0]) && !is_u8(n.inputs[0]))
      return "its input has no quantization parameters";
    if (!given_bias_fits(n, input_scale(n)))
      return "its bias, in units of the input's and the given weights' scales, is past the int8 kernels' exact "
             "range (an input range near zero)";
    return "";
  }

  // Whether some consumer of `t` reads it as uint8 once lowered.
  bool wants_u8(int t) const {
    for (int c : consumers[t]) {
      const ir::Node& n = nodes[c];
      if (n.op == Op::Conv && (n.inputs[0] == t || n.in(3) == t) && conv_blocker(n, n.inputs[0] == t).empty())
        return true;
      if (is_pool(g, n) && n.outputs.size() == 1 && !g.is_graph_output(n.outputs[0])) return true;
      if ((n.op == Op::Add || n.op == Op::Concat) && eltwise_int8(n, t)) return true;
      if (is_passthrough(g, n) && n.inputs[0] == t && !g.is_graph_output(n.outputs[0]) && wants_u8(n.outputs[0]))
        return true;
      if (n.op == Op::Lut && lut_int8(n)) return true;
      if (n.op == Op::Mul && gate_int8(n, t)) return true;
    }
    return false;
  }

  // Whether an Add (same shapes) or a channel Concat runs on uint8: every input quantized (or
  // about to be: `assumed`), its output quantized, the node not kept in float.
  bool eltwise_int8(const ir::Node& n, int assumed = -1) const {
    const int y = n.outputs.empty() ? -1 : n.outputs[0];
    if (y < 0 || n.outputs.size() != 1 || !quantized(y) || g.is_graph_output(y)) return false;
    if (ctx.keep_fp32.count(n.name)) return false;
    // ViT-B/16 (random weights) with its 24 residual adds in uint8: logits at cosine 0.93 against
    // fp32; 0.999 with them in float. A QDQ model says itself where it rounds.
    if (n.op == Op::Add && !ctx.qdq_model && sum_stays_float(nodes, consumers, n)) return false;
    for (int in : n.inputs)
      if (in < 0 || g.t(in).is_const() || !(in == assumed || quantized(in) || is_u8(in)) || (n.op == Op::Add && g.t(in).shape != g.t(y).shape))
        return false;
    if (n.op == Op::Add) return n.inputs.size() == 2;
    const int64_t r = static_cast<int64_t>(g.t(y).shape.size()), axis = n.i("axis", 0);
    return r == 4 && (axis == 1 || axis == -3);
  }

  // A table (passes/int8_tables.cc) from its input's grid to its output's, both uint8 here.
  bool lut_int8(const ir::Node& n) const {
    return n.inputs.size() == 1 && n.outputs.size() == 1 && n.outputs[0] >= 0 && quantized(n.outputs[0]) &&
           !g.is_graph_output(n.outputs[0]) && (quantized(n.inputs[0]) || is_u8(n.inputs[0]));
  }

  // A Mul of a 4-D tensor by one value per image and channel (a squeeze-excitation gate), all
  // three quantized (or about to be: `assumed`): runs on uint8. Returns the big operand's side.
  int gate_side(const ir::Node& n, int assumed = -1) const {
    if (n.op != Op::Mul || n.inputs.size() != 2 || n.outputs.size() != 1 || n.outputs[0] < 0) return -1;
    const int y = n.outputs[0];
    if (!quantized(y) || g.is_graph_output(y) || ctx.keep_fp32.count(n.name) || g.t(y).shape.size() != 4) return -1;
    for (int in : n.inputs)
      if (in < 0 || g.t(in).is_const() || !(in == assumed || quantized(in) || is_u8(in))) return -1;
    const ir::Shape& ys = g.t(y).shape;
    for (int side = 0; side < 2; ++side) {
      const ir::Shape& gs = g.t(n.inputs[1 - side]).shape;
      if (g.t(n.inputs[side]).shape == ys &&
          (gs == ir::Shape{ys[0], ys[1], 1, 1} || gs == ir::Shape{1, ys[1], 1, 1} || gs == ir::Shape{ys[1], 1, 1}))
        return side;
    }
    return -1;
  }
  bool gate_int8(const ir::Node& n, int assumed = -1) const { return gate_side(n, assumed) >= 0; }

  // y = x * gate in the output's units (kernels/qeltwise scale): input 0 the tensor, 1 the gate.
  void lower_gate(ir::Node& n) {
    const int side = gate_side(n);
    const int x = n.inputs[side], gate = n.inputs[1 - side];
    const ir::QuantParams qx = g.t(x).quant, qg = g.t(gate).quant, qy = g.t(n.outputs[0]).quant;
    n.set_f("q_g_scale", qg.scale[0]);
    n.set_i("q_g_zp", qg.zero_point[0]);
    n.set_f("q_ratio", qx.scale[0] / qy.scale[0]);
    n.set_i("q_x_zp", qx.zero_point[0]);
    n.set_i("q_zp", qy.zero_point[0]);
    n.inputs = {as_u8(x), as_u8(gate)};
    make_u8(n.outputs[0], qy);
  }

  int scalar(const std::string& name, DType dt, double v) {
    AlignedBytes b(ir::dtype_size(dt));
    if (dt == DType::f32) {
      const float f = static_cast<float>(v);
      std::memcpy(b.data(), &f, 4);
    } else {
      b[0] = static_cast<uint8_t>(v);
    }
    return g.add_const(g.fresh_name(name), dt, {}, std::move(b));
  }

  // The tensor as uint8 (a Quantize node the first time a float one is asked for).
  int as_u8(int t) {
    if (is_u8(t) || g.t(t).dtype == DType::u8) return t;
    auto it = u8_of.find(t);
    if (it != u8_of.end()) return it->second;
    ir::Tensor q = g.t(t);
    q.name = g.fresh_name(q.name + ".u8");
    q.dtype = DType::u8;
    const ir::QuantParams qp = q.quant;
    const int id = g.add_tensor(std::move(q));
    lowered.resize(g.tensors.size(), 0);
    lowered[id] = 1;
    ir::Node n;
    n.op = Op::QuantizeLinear;
    n.name = g.t(id).name;
    n.inputs = {t, scalar(n.name + ".scale", DType::f32, qp.scale[0]), scalar(n.name + ".zp", DType::u8, qp.zero_point[0])};
    n.outputs = {id};
    out.push_back(std::move(n));
    u8_of[t] = id;
    return id;
  }

  // The tensor as float (a Dequantize node the first time a lowered one is read by float code).
  int as_f32(int t) {
    if (rounded.count(t)) return as_f32(u8_of.at(t));
    if (!is_u8(t)) return t;
    auto it = f32_of.find(t);
    if (it != f32_of.end()) return it->second;
    ir::Tensor f = g.t(t);
    f.name = g.fresh_name(f.name + ".f32");
    f.dtype = DType::f32;
    f.quant = {};
    const ir::QuantParams qp = g.t(t).quant;
    const int id = g.add_tensor(std::move(f));
    lowered.resize(g.tensors.size(), 0);
    ir::Node n;
    n.op = Op::DequantizeLinear;
    n.name = g.t(id).name;
    n.inputs = {t, scalar(n.name + ".scale", DType::f32, qp.scale[0]), scalar(n.name + ".zp", DType::u8, qp.zero_point[0])};
    n.outputs = {id};
    out.push_back(std::move(n));
    f32_of[t] = id;
    return id;
  }

  // `t` now holds uint8 with parameters q; `lowered`: it was float before this pass (float
  // readers then get it through a Dequantize).
  void make_u8(int t, ir::QuantParams q, bool lowered_here = true) {
    g.t(t).dtype = DType::u8;
    g.t(t).quant = q;
    g.t(t).quant.qtype = DType::u8;
    lowered.resize(g.tensors.size(), 0);
    lowered[t] = lowered_here;
  }

  // Whether `w` arrived as int8 with its own symmetric scales (a QDQ model): it keeps them.
  static bool given_scales(const ir::Tensor& w) {
    const ir::QuantParams& q = w.quant;
    bool given = !q.empty() && q.qtype == DType::i8 &&
                 (q.per_tensor() || (q.axis == 0 && int64_t(q.scale.size()) == w.shape[0]));
    for (int32_t z : q.zero_point) given &= z == 0;
    return given;
  }

  // The scale a conv's bias is quantized against: its input's (an image plan's stem: 1).
  float input_scale(const ir::Node& n) const {
    if (n.i("src_u8", 0)) return 1.f;
    const ir::QuantParams& q = g.t(n.inputs[0]).quant;
    return q.per_tensor() ? q.scale[0] : 0.f;
  }

  // Whether a conv whose weights keep their given scales has every bias within the kernels'
  // exact range (kQConvMaxBias) at input scale sx; others widen their scales instead.
  bool given_bias_fits(const ir::Node& n, float sx) const {
    const ir::Tensor& w = g.t(n.in(1));
    if (n.in(2) < 0 || !given_scales(w) || !(sx > 0.f)) return true;
    const float* b = g.t(n.in(2)).as<float>();
    for (int64_t k = 0; k < w.shape[0]; ++k) {
      const float bs = sx * w.quant.scale[w.quant.per_tensor() ? 0 : k];
      if (!(std::fabs(std::nearbyint(double(b[k]) / bs)) <= double(kernels::kQConvMaxBias))) return false;
    }
    return true;
  }

  // Symmetric int8 per output channel. Weights that arrived as int8 keep their integers. Else a
  // channel's scale is widened where its bias, in units of sx times that scale, would pass half
  // the kernels' exact range (an input calibrated to a tiny range: a dead activation, or a
  // network whose signal fades): the bias then dominates that channel's output, and the
  // coarser weights lose only what the tiny input contributes.
  void quantize_weights(const ir::Tensor& w, const ir::Tensor* bias, float sx, std::vector<int8_t>* wq,
                        std::vector<float>* sw) {
    const int64_t oc = w.shape[0], per = w.numel() / oc;
    const float* v = w.as<float>();
    const ir::QuantParams& q = w.quant;
    const bool given = given_scales(w);
    sw->assign(oc, 1.f);
    wq->resize(w.numel());
    for (int64_t k = 0; k < oc; ++k) {
      float s;
      if (given) {
        s = q.scale[q.per_tensor() ? 0 : k];
      } else {
        float m = 0.f;
        for (int64_t i = 0; i < per; ++i) m = std::max(m, std::fabs(v[k * per + i]));
        s = m > 0.f ? m / 127.f : 1.f;
        if (bias && sx > 0.f) s = std::max(s, kernels::qconv_min_weight_scale(bias->as<float>()[k], sx));
      }
      (*sw)[k] = s;
      for (int64_t i = 0; i < per; ++i) {
        const float r = std::nearbyint(v[k * per + i] / s);
        (*wq)[k * per + i] = static_cast<int8_t>(std::min(127.f, std::max(given ? -128.f : -127.f, r)));
      }
    }
  }

  // Adding tensors moves them: nothing below holds a reference across g.add_*, as_u8 or as_f32.
  void lower_conv(ir::Node& n) {
    const bool image = n.i("src_u8", 0) != 0;
    const ir::Shape wshape = g.t(n.inputs[1]).shape;
    const std::string wname = g.t(n.inputs[1]).name;
    const int64_t oc = wshape[0], icg = wshape[1], taps = wshape[2] * wshape[3];
    const int64_t groups = n.i("group", 1), ic = icg * groups;
    // The input's scale and per-channel zero points (an image: 1 and 255 * mean).
    const float sx = input_scale(n);
    std::vector<double> zx(ic, 0.0);
    if (image) {
      const auto& off = n.attrs.at("src_offset").floats_v;
      for (int64_t c = 0; c < ic; ++c) zx[c] = off[c];
    } else {
      for (double& z : zx) z = g.t(n.inputs[0]).quant.zero_point[0];
    }
    const ir::Tensor* b = n.in(2) >= 0 ? &g.t(n.in(2)) : nullptr;
    std::vector<int8_t> wq;
    std::vector<float> sw;
    quantize_weights(g.t(n.inputs[1]), b, sx, &wq, &sw);
    // Bias in accumulator units (within kQConvMaxBias: see quantize_weights and conv_blocker),
    // less the input zero points times the weights.
    std::vector<int32_t> bias(oc);
    const int64_t ocg = oc / groups;
    for (int64_t k = 0; k < oc; ++k) {
      const float bs = sx * sw[k];
      double v = b ? std::nearbyint(static_cast<double>(b->as<float>()[k]) / bs) : 0.0;
      double comp = 0;
      const int64_t g0 = (k / ocg) * icg;
      for (int64_t c = 0; c < icg; ++c)
        for (int64_t t = 0; t < taps; ++t) comp += zx[g0 + c] * wq[(k * icg + c) * taps + t];
      v -= std::nearbyint(comp);
      bias[k] = static_cast<int32_t>(std::clamp(v, -2147483648.0, 2147483647.0));
    }
    std::vector<int64_t> pad(ic);
    for (int64_t c = 0; c < ic; ++c) pad[c] = std::clamp<int64_t>(std::llround(zx[c]), 0, 255);

    int y = n.outputs[0];
    const int res = n.in(3);
    const auto act = static_cast<kernels::Act>(n.i("act", 0));
    const bool act_int8 = act == kernels::Act::none || act == kernels::Act::relu || act == kernels::Act::clip;
    const bool res_ok = res < 0 || quantized(res) || is_u8(res);
    // An explicit QuantizeLinear to uint8 as the conv's only reader (a QDQ model's output pair):
    // the conv writes its integers directly and the node goes.
    bool to_q = false;
    if (act_int8 && res_ok && consumers[y].size() == 1 && !g.is_graph_output(y)) {
      const ir::Node& q = nodes[consumers[y][0]];
      const int yq = q.outputs.empty() ? -1 : q.outputs[0];
      if (q.op == Op::QuantizeLinear && yq >= 0 && g.t(yq).dtype == DType::u8 && q.in(1) >= 0 &&
          g.t(q.in(1)).is_const() && g.t(q.in(1)).dtype == DType::f32 && g.t(q.in(1)).numel() == 1 &&
          g.t(q.in(1)).as<float>()[0] > 0.f &&
          (q.in(2) < 0 || (g.t(q.in(2)).is_const() && g.t(q.in(2)).dtype == DType::u8 && g.t(q.in(2)).numel() == 1))) {
        ir::QuantParams qp;
        qp.scale = {g.t(q.in(1)).as<float>()[0]};
        qp.zero_point = {q.in(2) >= 0 ? g.t(q.in(2)).as<uint8_t>()[0] : 0};
        qp.qtype = DType::u8;
        g.t(yq).quant = qp;
        skip.insert(&q);
        n.outputs[0] = y = yq;
        to_q = true;
      }
    }
    const bool u8_out = quantized(y) && act_int8 && res_ok && (to_q || (!g.is_graph_output(y) && wants_u8(y)));
    std::vector<float> scale(oc);
    // A QDQ model's roundings inside the fused conv (fuse_epilogue): its own output's grid
    // before the residual (1), the grid before the activation (2).
    float mid_s[2] = {0.f, 0.f}, mid_z[2] = {0.f, 0.f};
    bool mid[2] = {false, false};
    for (int m = 0; m < 2; ++m) {
      auto it = n.attrs.find(m == 0 ? "qdq_mid1" : "qdq_mid2");
      if (it == n.attrs.end()) continue;
      mid[m] = it->second.floats_v.size() == 2 && it->second.floats_v[0] > 0.f;
      if (mid[m]) mid_s[m] = it->second.floats_v[0], mid_z[m] = it->second.floats_v[1];
      n.attrs.erase(it);
    }
    mid[0] = mid[0] && res >= 0;
    if (u8_out) {
      const float sy = g.t(y).quant.scale[0];
      const int32_t zy = g.t(y).quant.zero_point[0];
      const float after_res = mid[1] ? mid_s[1] : sy, first = mid[0] ? mid_s[0] : after_res;
      for (int64_t k = 0; k < oc; ++k) scale[k] = sx * sw[k] / first;
      if (mid[0]) n.set_floats("q_mid1", {-mid_z[0], 255.f - mid_z[0], mid_s[0] / after_res});
      if (mid[1]) n.set_floats("q_mid2", {-mid_z[1], 255.f - mid_z[1], mid_s[1] / sy});
      float lo = static_cast<float>(-zy), hi = static_cast<float>(255 - zy);
      if (act == kernels::Act::relu) lo = std::max(lo, 0.f);
      if (act == kernels::Act::clip) {
        lo = std::max(lo, n.f("act_a", 0.f) / sy);
        hi = std::min(hi, n.f("act_b", 0.f) / sy);
      }
      n.set_i("q_zp", zy);
      n.set_f("q_lo", lo);
      n.set_f("q_hi", std::max(lo, hi));
      if (res >= 0) {
        n.set_f("q_res_scale", g.t(res).quant.scale[0] / after_res);
        n.set_i("q_res_zp", g.t(res).quant.zero_point[0]);
        n.inputs[3] = as_u8(res);
      }
      n.attrs.erase("act");
      n.attrs.erase("act_a");
      n.attrs.erase("act_b");
    } else {
      for (int64_t k = 0; k < oc; ++k) scale[k] = sx * sw[k];
      n.set_i("q_out_f32", 1);
      if (res >= 0) n.inputs[3] = as_f32(res);
      // The model's rounding before a float-only activation: the runtime applies it to the
      // kernel's sums and then the activation (session_quant.cc).
      if (ctx.qdq_model && !act_int8 && mid[1]) n.set_floats("q_pre_grid", {mid_s[1], mid_z[1]});
    }
    if (!image) n.inputs[0] = as_u8(n.inputs[0]);
    // The image's bytes are this conv's uint8 input as they are (scale 1, zero points in bias
    // and padding): an ordinary int8 conv now, not the fp32 family's converting read.
    n.attrs.erase("src_u8");
    n.attrs.erase("src_offset");
    n.set_floats("q_scale", scale);
    n.set_ints("q_pad", pad);
    AlignedBytes wb(wq.size());
    std::memcpy(wb.data(), wq.data(), wq.size());
    const int wid = g.add_const(g.fresh_name(wname + ".int8"), DType::i8, wshape, std::move(wb));
    g.t(wid).quant = {sw, std::vector<int32_t>(oc, 0), 0, DType::i8};
    AlignedBytes bb(oc * 4);
    std::memcpy(bb.data(), bias.data(), bb.size());
    const int bid = g.add_const(g.fresh_name(n.name + ".bias_int32"), DType::i32, {oc}, std::move(bb));
    n.inputs[1] = wid;
    if (n.inputs.size() < 3) n.inputs.resize(3, -1);
    n.inputs[2] = bid;
    if (u8_out) {
      const ir::QuantParams qy = g.t(y).quant;
      make_u8(y, qy, !to_q);  // an explicit QuantizeLinear's output was uint8 already
    }
    ++convs;
  }

  // y = requantize(a) + requantize(b) in the output's units (kernels/qeltwise).
  void lower_add(ir::Node& n) {
    const ir::QuantParams qy = g.t(n.outputs[0]).quant, qa = g.t(n.inputs[0]).quant, qb = g.t(n.inputs[1]).quant;
    n.set_f("q_a_scale", qa.scale[0] / qy.scale[0]);
    n.set_f("q_b_scale", qb.scale[0] / qy.scale[0]);
    n.set_i("q_a_zp", qa.zero_point[0]);
    n.set_i("q_b_zp", qb.zero_point[0]);
    n.set_i("q_zp", qy.zero_point[0]);
    for (int& in : n.inputs) in = as_u8(in);
    make_u8(n.outputs[0], qy);
  }

  // Each input requantized into its channel slice (a copy where the parameters agree).
  void lower_concat(ir::Node& n) {
    const ir::QuantParams qy = g.t(n.outputs[0]).quant;
    std::vector<float> scales;
    std::vector<int64_t> zps;
    for (int& in : n.inputs) {
      scales.push_back(g.t(in).quant.scale[0] / qy.scale[0]);
      zps.push_back(g.t(in).quant.zero_point[0]);
      in = as_u8(in);
    }
    n.set_floats("q_scales", scales);
    n.set_ints("q_zps", zps);
    n.set_i("q_zp", qy.zero_point[0]);
    make_u8(n.outputs[0], qy);
  }

  void lower_pool(ir::Node& n) {
    const int x = n.inputs[0], y = n.outputs[0];
    ir::QuantParams q = g.t(x).quant;
    const bool average = n.op == Op::AveragePool || n.op == Op::GlobalAveragePool;
    // Max commutes with the (monotone) quantization: the output keeps the input's integers.
    if (average && quantized(y)) q = g.t(y).quant;
    n.inputs[0] = as_u8(x);
    make_u8(y, q);
    ++pools;
  }

  Status run() {
    consumers = g.consumers();
    lowered.assign(g.tensors.size(), 0);
    nodes = std::move(g.nodes);
    g.nodes.clear();
    // A QDQ model's quantization of a float graph input rounds it for float readers too (one
    // Quantize, shared with the int8 convs that read it).
    if (ctx.qdq_model)
      for (int in : g.inputs)
        if (in >= 0 && g.t(in).dtype == DType::f32 && quantized(in)) {
          as_u8(in);
          rounded.insert(in);
        }
    for (ir::Node& n : nodes) {
      if (skip.count(&n)) continue;
      if (n.op == Op::Conv) {
        const std::string why = conv_blocker(n);
        if (why.empty()) {
          lower_conv(n);
          // A QDQ model rounds this conv's output to its uint8 grid, but the conv writes float
          // for float readers: the rounding follows the kernel in the same step (session_run),
          // where Quantize and Dequantize steps cost MobileNetV3-small a quarter of its time.
          const int y = n.outputs[0];
          if (ctx.qdq_model && n.i("q_out_f32", 0) && quantized(y) && !g.is_graph_output(y))
            n.set_floats("q_grid", {g.t(y).quant.scale[0], float(g.t(y).quant.zero_point[0])});
          out.push_back(std::move(n));
          continue;
        }
        if (g.t(n.inputs[0]).dtype == DType::f32 || is_u8(n.inputs[0])) note(n, why);
      } else if (is_pool(g, n) && n.outputs.size() == 1 && (is_u8(n.inputs[0]) || quantized(n.inputs[0])) &&
                 !g.is_graph_output(n.outputs[0]) && wants_u8(n.outputs[0])) {
        lower_pool(n);
        out.push_back(std::move(n));
        continue;
      } else if ((n.op == Op::Add || n.op == Op::Concat) && eltwise_int8(n) &&
                 (ctx.qdq_model || wants_u8(n.outputs[0]) || std::any_of(n.inputs.begin(), n.inputs.end(),
                                                                          [&](int in) { return is_u8(in); }))) {
        if (n.op == Op::Add) lower_add(n);
        else lower_concat(n);
        ++eltwise;
        out.push_back(std::move(n));
        continue;
      } else if (n.op == Op::Mul && gate_int8(n) &&
                 (ctx.qdq_model || wants_u8(n.outputs[0]) || is_u8(n.inputs[0]) || is_u8(n.inputs[1]))) {
        lower_gate(n);
        ++eltwise;
        out.push_back(std::move(n));
        continue;
      } else if (n.op == Op::Lut && lut_int8(n)) {
        n.inputs[0] = as_u8(n.inputs[0]);
        make_u8(n.outputs[0], g.t(n.outputs[0]).quant);
        ++tables;
        out.push_back(std::move(n));
        continue;
      } else if (is_passthrough(g, n) && (is_u8(n.inputs[0]) || rounded.count(n.inputs[0])) &&
                 !g.is_graph_output(n.outputs[0]) && (n.outputs.size() == 1 || n.outputs[1] < 0) &&
                 wants_u8(n.outputs[0])) {
        // A QDQ model's rounded float output (a LayerNorm's) is read as its uint8 form.
        n.inputs[0] = as_u8(n.inputs[0]);
        const ir::QuantParams q = g.t(n.inputs[0]).quant;
        make_u8(n.outputs[0], q);
        if (n.op == Op::Gather && n.i("zero_fill", 0)) n.set_i("fill", q.zero_point[0]);  // real 0
        out.push_back(std::move(n));
        continue;
      }
      // Float code: uint8 tensors this pass made are read through a Dequantize.
      for (std::size_t i = 0; i < n.inputs.size(); ++i)
        if (n.inputs[i] >= 0 && !(n.op == Op::DequantizeLinear && i == 0)) n.inputs[i] = as_f32(n.inputs[i]);
      std::vector<int> outs = n.outputs;
      out.push_back(std::move(n));
      // A QDQ model's quantization of a float op's output still rounds it (a Quantize here;
      // float readers get it back through a Dequantize).
      if (ctx.qdq_model)
        for (int o : outs)
          if (o >= 0 && quantized(o) && g.t(o).dtype == DType::f32 && !g.is_graph_output(o)) {
            as_u8(o);
            rounded.insert(o);
          }
    }
    g.nodes = std::move(out);
    ctx.log += "lower_int8: " + std::to_string(convs) + " convolutions, " + std::to_string(pools) + " pools and " +
               std::to_string(eltwise) + " adds/concats in int8, " + std::to_string(tables) + " tables\n";
    if (convs == 0 && ctx.qdq_model)
      return Err("precision int8: no convolution of this quantized model can run on the int8 kernels (they run "
                 "convolutions; the model quantizes other ops): run it with --precision fp32, which computes its "
                 "Q/DQ pairs in float");
    if (convs == 0)
      return Err("precision int8: no convolution could be quantized (the model has no quantization parameters: "
                 "calibrate it with systolic quantize, or give a QDQ model)");
    return Status::Ok();
  }
};

}  // namespace

bool sum_stays_float(const std::vector<ir::Node>& nodes, const std::vector<std::vector<int>>& consumers,
                     const ir::Node& add) {
  if (add.op != Op::Add || add.outputs.size() != 1 || add.outputs[0] < 0) return false;
  for (int c : consumers[add.outputs[0]]) {
    const Op op = nodes[c].op;
    if (op == Op::LayerNormalization || op == Op::GroupNormalization || op == Op::InstanceNormalization ||
        op == Op::MeanVarianceNormalization || op == Op::ReduceMean)
      return true;
  }
  return false;
}

Status lower_int8(ir::Graph& g, PassContext& ctx) {
  if (ctx.precision != Precision::int8 || !ctx.optimize) return Status::Ok();
  Lowering l{g, ctx, {}, {}, {}, {}, {}, {}, {}, {}};
  return l.run();
}

}  // namespace systolic::passes
