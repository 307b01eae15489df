// Session steps of int8 plans: int8 convolutions, uint8 pools and per-tensor quantize /
// dequantize, prepared once from the plan's attributes, each checked against its tensors.
#include <algorithm>
#include <cmath>

#include "interp/nn_geometry.h"
#include "runtime/session_step.h"

namespace systolic::runtime {
namespace {

using ir::DType;

bool u8_zero_point(int64_t v) { return v >= 0 && v <= 255; }

// One scale and zero point, constant, for QuantizeLinear / DequantizeLinear.
bool per_tensor_params(const ir::Graph& g, const ir::Node& n, float* scale, int32_t* zp) {
  const int s = n.in(1), z = n.in(2);
  if (s < 0 || !g.t(s).is_const() || g.t(s).dtype != DType::f32 || g.t(s).numel() != 1) return false;
  if (z >= 0 && (!g.t(z).is_const() || g.t(z).dtype != DType::u8 || g.t(z).numel() != 1)) return false;
  *scale = g.t(s).as<float>()[0];
  *zp = z >= 0 ? g.t(z).as<uint8_t>()[0] : 0;
  return *scale > 0.f;
}

Status prepare_qconv(const ir::Graph& g, const ir::Node& n, const std::function<void*(int)>& at, Session::Step* st,
                     std::size_t* workspace) {
  st->kind = Session::Step::qconv;
  const std::string& name = n.attrs.at("kernel").str_v;
  st->qconv_k = kernels::qconv_find(name);
  if (!st->qconv_k) return Err("plan uses unknown kernel %s", name.c_str());
  if (!interp::decode_conv_params(n.ints("conv_params"), &st->qp.conv))
    return Err("plan is corrupt: conv %s lacks its parameters", n.name.c_str());
  st->qp.out_f32 = static_cast<int>(n.i("q_out_f32", 0));
  const kernels::ConvParams& p = st->qp.conv;
  std::string why;
  if (!st->qconv_k->accepts(st->qp, host_cpu(), &why))
    return Err("kernel %s cannot run conv %s here: %s; recompile the model", name.c_str(), n.name.c_str(), why.c_str());
  const int64_t out_n = int64_t{p.n} * p.oh * p.ow * p.oc;
  const DType out_t = st->qp.out_f32 ? DType::f32 : DType::u8;
  auto scale = n.attrs.find("q_scale");
  const std::vector<int64_t> pad = n.ints("q_pad");
  const bool ok = n.inputs.size() >= 3 && g.t(n.inputs[0]).dtype == DType::u8 &&
                  g.t(n.inputs[0]).numel() == int64_t{p.n} * p.ih * p.iw * p.ic &&
                  g.t(n.inputs[1]).bytes() == st->qconv_k->packed_bytes(st->qp) && n.in(2) >= 0 &&
                  g.t(n.in(2)).dtype == DType::i32 && g.t(n.in(2)).numel() == p.oc &&
                  g.t(n.outputs[0]).dtype == out_t && g.t(n.outputs[0]).numel() == out_n &&
                  (n.in(3) < 0 || (g.t(n.in(3)).dtype == out_t && g.t(n.in(3)).numel() == out_n)) &&
                  scale != n.attrs.end() && scale->second.floats_v.size() == static_cast<std::size_t>(p.oc) &&
                  pad.size() == static_cast<std::size_t>(p.ic);
  if (!ok) return Err("plan is corrupt: int8 conv %s does not match its tensors", n.name.c_str());
  SYSTOLIC_RETURN_IF_ERROR(check_conv_step(g, n, p, 1, st->qp.out_f32 ? 4 : 1));
  for (int64_t v : pad)
    if (v < 0 || v > 255) return Err("plan is corrupt: int8 conv %s has a padding byte out of range", n.name.c_str());
  st->q_pad.assign(pad.begin(), pad.end());
  kernels::QConvArgs& a = st->qa;
  a.src = static_cast<const uint8_t*>(at(n.inputs[0]));
  a.pad = st->q_pad.data();
  a.weights = at(n.inputs[1]);
  a.bias = static_cast<const int32_t*>(at(n.in(2)));
  a.scale = scale->second.floats_v.data();
  a.residual = at(n.in(3));
  a.dst = at(n.outputs[0]);
  kernels::QRequant& rq = a.rq;
  const int64_t zp = n.i("q_zp", 0), res_zp = n.i("q_res_zp", 0);
  if (!u8_zero_point(zp) || !u8_zero_point(res_zp))
    return Err("plan is corrupt: int8 conv %s has a zero point outside uint8", n.name.c_str());
  rq.res_scale = n.f("q_res_scale", 1.f);
  rq.res_zp = static_cast<int32_t>(res_zp);
  rq.zp = static_cast<int32_t>(zp);
  rq.lo = n.f("q_lo", 0.f);
  rq.hi = n.f("q_hi", 255.f);
  if (!st->qp.out_f32 && !(rq.lo >= -rq.zp && rq.hi <= 255 - rq.zp && rq.lo <= rq.hi))
    return Err("plan is corrupt: int8 conv %s has a clamp outside uint8", n.name.c_str());
  for (int m = 0; m < 2; ++m) {  // the intermediate roundings of a QDQ model: lo, hi, scale
    auto it = n.attrs.find(m == 0 ? "q_mid1" : "q_mid2");
    if (it == n.attrs.end()) continue;
    const std::vector<float>& v = it->second.floats_v;
    if (v.size() != 3 || !(v[0] <= v[1]) || v[0] < -255.f || v[1] > 255.f)
      return Err("plan is corrupt: int8 conv %s has a bad intermediate rounding", n.name.c_str());
    rq.mid |= 1 << m;
    rq.mid_lo[m] = v[0], rq.mid_hi[m] = v[1], rq.mid_scale[m] = v[2];
  }
  if (auto it = n.attrs.find("q_table"); it != n.attrs.end()) {  // a table fused in (passes/fuse_lut.cc)
    const std::vector<int64_t>& t = it->second.ints_v;
    bool ok = !st->qp.out_f32 && t.size() == 256;
    for (int64_t v : t) ok = ok && v >= 0 && v <= 255;
    if (!ok) return Err("plan is corrupt: int8 conv %s has a malformed table", n.name.c_str());
    const kernels::QLutKernel* k = kernels::qlut_select(host_cpu());
    if (!k) return Err("no table kernel runs on this machine");
    st->lut.assign(t.begin(), t.end());
    rq.lut = st->lut.data();
    rq.lut_rows = k->rows;
  }
  a.ep.act = static_cast<kernels::Act>(n.i("act", 0));
  a.ep.a = n.f("act_a", 0.f);
  a.ep.b = n.f("act_b", 0.f);
  // A QDQ model's roundings of the float output to uint8 grids (scale, zero point): q_grid of
  // the output itself; q_pre_grid of the sum before a float-only activation, which then runs
  // after the kernel, in place.
  auto grid = [&](const char* attr, float* scale, int32_t* zp) -> Status {
    auto it = n.attrs.find(attr);
    if (it == n.attrs.end()) return Status::Ok();
    const std::vector<float>& v = it->second.floats_v;
    if (!st->qp.out_f32 || v.size() != 2 || !(v[0] > 0.f) || !std::isfinite(v[0]) || !(v[1] >= 0.f && v[1] <= 255.f) ||
        v[1] != std::nearbyint(v[1]))
      return Err("plan is corrupt: int8 conv %s has a bad %s", n.name.c_str(), attr);
    st->quant_k = kernels::quant_select(host_cpu());
    if (!st->quant_k) return Err("no quantize kernel runs on this machine");
    *scale = v[0];
    *zp = static_cast<int32_t>(v[1]);
    st->count = out_n;
    return Status::Ok();
  };
  SYSTOLIC_RETURN_IF_ERROR(grid("q_grid", &st->q_scale, &st->q_zp));
  st->q_grid = n.attrs.count("q_grid") > 0;
  SYSTOLIC_RETURN_IF_ERROR(grid("q_pre_grid", &st->q_pre_scale, &st->q_pre_zp));
  if (n.attrs.count("q_pre_grid")) {
    st->ep.n = out_n;
    st->ep.act = a.ep;
    a.ep = kernels::Epilogue{};
    st->elt_k = kernels::eltwise_select(st->ep, host_cpu());
    if (!st->elt_k) return Err("no element-wise kernel runs conv %s's activation here", n.name.c_str());
  }
  *workspace = std::max(*workspace, st->qconv_k->workspace_bytes(st->qp));
  st->flops = 2.0 * p.n * p.oh * p.ow * p.oc * (p.ic / p.groups) * p.kh * p.kw;
  return Status::Ok();
}

Status prepare_qpool(const ir::Graph& g, const ir::Node& n, const std::function<void*(int)>& at, Session::Step* st) {
  st->kind = Session::Step::qpool;
  const std::string& name = n.attrs.at("kernel").str_v;
  st->qpool_k = kernels::qpool_find(name);
  if (!st->qpool_k) return Err("plan uses unknown kernel %s", name.c_str());
  SYSTOLIC_RETURN_IF_ERROR(interp::pool_geometry(n, g.t(n.inputs[0]).shape, &st->pp));
  const ir::Tensor& x = g.t(n.inputs[0]);
  const ir::Tensor& y = g.t(n.outputs[0]);
  if (x.dtype != DType::u8) return Err("plan is corrupt: uint8 pool %s reads %s", n.name.c_str(), ir::dtype_name(x.dtype));
  SYSTOLIC_RETURN_IF_ERROR(check_pool_step(g, n, st->pp));
  st->qpa.src = static_cast<const uint8_t*>(at(n.inputs[0]));
  st->qpa.dst = static_cast<uint8_t*>(at(n.outputs[0]));
  // A plain uint8 MaxPool (an integer model, no quantization) selects values: any scale works.
  const bool plain_max = st->pp.kind == kernels::PoolKind::max && x.quant.empty() && y.quant.empty();
  if (y.dtype != DType::u8 || (!plain_max && (!x.quant.per_tensor() || !y.quant.per_tensor())))
    return Err("plan is corrupt: uint8 pool %s lacks quantization parameters", n.name.c_str());
  if (plain_max) {
    st->qpa.in_zp = st->qpa.out_zp = 0;
    st->qpa.scale = 1.f;
    return Status::Ok();
  }
  st->qpa.in_zp = x.quant.zero_point[0];
  st->qpa.out_zp = y.quant.zero_point[0];
  st->qpa.scale = x.quant.scale[0] / y.quant.scale[0];
  if (st->pp.kind == kernels::PoolKind::max && (st->qpa.in_zp != st->qpa.out_zp || x.quant.scale != y.quant.scale))
    return Err("plan is corrupt: uint8 max pool %s changes the quantization", n.name.c_str());
  return Status::Ok();
}

// A uint8 Add of two same-shape tensors (lower_int8).
Status prepare_qadd(const ir::Graph& g, const ir::Node& n, const std::function<void*(int)>& at, Session::Step* st) {
  st->kind = Session::Step::qadd;
  st->qelt_k = kernels::qeltwise_select(host_cpu());
  const ir::Tensor& y = g.t(n.outputs[0]);
  if (n.inputs.size() != 2) return Err("plan is corrupt: uint8 Add %s does not have two inputs", n.name.c_str());
  for (int in : n.inputs)
    if (in < 0 || g.t(in).dtype != DType::u8 || g.t(in).numel() != y.numel() || g.t(in).layout != y.layout)
      return Err("plan is corrupt: uint8 Add %s does not match its tensors", n.name.c_str());
  if (!u8_zero_point(n.i("q_a_zp", 0)) || !u8_zero_point(n.i("q_b_zp", 0)) || !u8_zero_point(n.i("q_zp", 0)))
    return Err("plan is corrupt: uint8 Add %s has a zero point outside uint8", n.name.c_str());
  kernels::QAddParams& p = st->qadd_p;
  p.n = y.numel();
  p.a_scale = n.f("q_a_scale", 1.f);
  p.b_scale = n.f("q_b_scale", 1.f);
  p.a_zp = static_cast<int32_t>(n.i("q_a_zp", 0));
  p.b_zp = static_cast<int32_t>(n.i("q_b_zp", 0));
  p.y_zp = static_cast<int32_t>(n.i("q_zp", 0));
  p.lo = static_cast<float>(-p.y_zp);
  p.hi = static_cast<float>(255 - p.y_zp);
  st->qcat_src = {static_cast<const uint8_t*>(at(n.inputs[0])), static_cast<const uint8_t*>(at(n.inputs[1]))};
  st->qcat_dst = {static_cast<uint8_t*>(at(n.outputs[0]))};
  return Status::Ok();
}

// A uint8 channel Concat of 4-D tensors: each input requantized into its slice, NHWC (rows are
// pixels) or plain (rows are images).
Status prepare_qconcat(const ir::Graph& g, const ir::Node& n, const std::function<void*(int)>& at, Session::Step* st) {
  st->kind = Session::Step::qconcat;
  const ir::Tensor& y = g.t(n.outputs[0]);
  const auto& scales = n.attrs.count("q_scales") ? n.attrs.at("q_scales").floats_v : std::vector<float>{};
  const std::vector<int64_t> zps = n.ints("q_zps");
  if (y.shape.size() != 4 || scales.size() != n.inputs.size() || zps.size() != n.inputs.size())
    return Err("plan is corrupt: uint8 Concat %s lacks its parameters", n.name.c_str());
  if (!u8_zero_point(n.i("q_zp", 0)) || !std::all_of(zps.begin(), zps.end(), u8_zero_point))
    return Err("plan is corrupt: uint8 Concat %s has a zero point outside uint8", n.name.c_str());
  const bool nhwc = y.layout == ir::Layout::nhwc;
  const int64_t N = y.shape[0], C = y.shape[1], HW = y.shape[2] * y.shape[3];
  int64_t c0 = 0;
  for (std::size_t k = 0; k < n.inputs.size(); ++k) {
    if (n.inputs[k] < 0) return Err("plan is corrupt: uint8 Concat %s lacks an input", n.name.c_str());
    const ir::Tensor& x = g.t(n.inputs[k]);
    if (x.dtype != DType::u8 || x.layout != y.layout || x.shape.size() != 4 || x.shape[0] != N ||
        x.shape[2] * x.shape[3] != HW)
      return Err("plan is corrupt: uint8 Concat %s does not match its tensors", n.name.c_str());
    const int64_t ci = x.shape[1];
    kernels::QRequantParams p;
    p.rows = nhwc ? N * HW : N;
    p.cols = nhwc ? ci : ci * HW;
    p.src_stride = p.cols;
    p.dst_stride = nhwc ? C : C * HW;
    p.scale = scales[k];
    p.x_zp = static_cast<int32_t>(zps[k]);
    p.y_zp = static_cast<int32_t>(n.i("q_zp", 0));
    st->qcat.push_back(p);
    st->qcat_src.push_back(static_cast<const uint8_t*>(at(n.inputs[k])));
    st->qcat_dst.push_back(static_cast<uint8_t*>(at(n.outputs[0])) + (nhwc ? c0 : c0 * HW));
    c0 += ci;
  }
  if (c0 != C) return Err("plan is corrupt: uint8 Concat %s does not add up to its output", n.name.c_str());
  // Each input's requantization is a function of one byte: its table of 256 values, computed
  // with the reference (kernels/qeltwise qrequant_n), so a lookup gives its very bytes.
  st->qlut_k = kernels::qlut_select(host_cpu());
  if (!st->qlut_k) return Err("no table kernel runs on this machine");
  st->lut.resize(256 * st->qcat.size());
  uint8_t all[256];
  for (int v = 0; v < 256; ++v) all[v] = static_cast<uint8_t>(v);
  for (std::size_t k = 0; k < st->qcat.size(); ++k) {
    const kernels::QRequantParams& p = st->qcat[k];
    kernels::qrequant_n(p, all, st->lut.data() + 256 * k, 256);
    st->qcat_parts.push_back({st->lut.data() + 256 * k, st->qcat_src[k], st->qcat_dst[k], p.cols, p.src_stride,
                              p.dst_stride});
  }
  st->count = st->qcat.empty() ? 0 : st->qcat[0].rows;
  return Status::Ok();
}

// A uint8 Mul of a 4-D tensor (input 0) by a gate per image and channel (input 1), lower_int8.
Status prepare_qscale(const ir::Graph& g, const ir::Node& n, const std::function<void*(int)>& at, Session::Step* st) {
  st->kind = Session::Step::qscale;
  st->qelt_k = kernels::qeltwise_select(host_cpu());
  const ir::Tensor& x = g.t(n.inputs[0]);
  const ir::Tensor& gate = g.t(n.inputs[1]);
  const ir::Tensor& y = g.t(n.outputs[0]);
  if (y.shape.size() != 4 || x.dtype != DType::u8 || gate.dtype != DType::u8 || x.numel() != y.numel() ||
      x.layout != y.layout || (gate.numel() != y.shape[0] * y.shape[1] && gate.numel() != y.shape[1]))
    return Err("plan is corrupt: uint8 Mul %s does not match its tensors", n.name.c_str());
  if (!u8_zero_point(n.i("q_g_zp", 0)) || !u8_zero_point(n.i("q_x_zp", 0)) || !u8_zero_point(n.i("q_zp", 0)))
    return Err("plan is corrupt: uint8 Mul %s has a zero point outside uint8", n.name.c_str());
  kernels::QScaleParams& p = st->qscale_p;
  p.n = y.shape[0], p.c = y.shape[1], p.hw = y.shape[2] * y.shape[3];
  p.nhwc = y.layout == ir::Layout::nhwc;
  p.gate_per_image = gate.numel() == p.n * p.c;
  p.g_scale = n.f("q_g_scale", 1.f);
  p.ratio = n.f("q_ratio", 1.f);
  p.g_zp = static_cast<int32_t>(n.i("q_g_zp", 0));
  p.x_zp = static_cast<int32_t>(n.i("q_x_zp", 0));
  p.y_zp = static_cast<int32_t>(n.i("q_zp", 0));
  st->qscale_m.assign(static_cast<std::size_t>(p.n * p.c), 0.f);
  st->qcat_src = {static_cast<const uint8_t*>(at(n.inputs[0])), static_cast<const uint8_t*>(at(n.inputs[1]))};
  st->qcat_dst = {static_cast<uint8_t*>(at(n.outputs[0]))};
  return Status::Ok();
}

// A table between two uint8 grids (passes/int8_tables.cc), element-wise in either layout.
Status prepare_qlut(const ir::Graph& g, const ir::Node& n, const std::function<void*(int)>& at, Session::Step* st) {
  st->kind = Session::Step::qlut;
  float sx, sy;
  int32_t zx, zy;
  SYSTOLIC_RETURN_IF_ERROR(interp::lut_params(n, &st->lut, &sx, &zx, &sy, &zy));
  const ir::Tensor& x = g.t(n.inputs[0]);
  const ir::Tensor& y = g.t(n.outputs[0]);
  if (x.numel() != y.numel() || x.layout != y.layout)
    return Err("plan is corrupt: uint8 table %s does not match its tensors", n.name.c_str());
  st->qlut_k = kernels::qlut_select(host_cpu());
  if (!st->qlut_k) return Err("no table kernel runs on this machine");
  st->qcat_src = {static_cast<const uint8_t*>(at(n.inputs[0]))};
  st->qcat_dst = {static_cast<uint8_t*>(at(n.outputs[0]))};
  st->count = x.numel();
  return Status::Ok();
}

}  // namespace

Status prepare_quantized_step(const ir::Graph& g, const ir::Node& n, const std::function<void*(int)>& at,
                              Session::Step* st, bool* handled, std::size_t* workspace) {
  *handled = false;
  const bool has_kernel = n.attrs.count("kernel") != 0;
  // Optional inputs are -1 in a plan; the steps below need their first inputs and outputs.
  const bool ins = !n.inputs.empty() && n.inputs[0] >= 0 && (n.inputs.size() < 2 || n.inputs[1] >= 0);
  const bool outs = n.outputs.size() == 1 && n.outputs[0] >= 0;
  if (has_kernel && (!ins || !outs))
    return Err("plan is corrupt: %s %s lacks an input or output", ir::op_name(n.op), n.name.c_str());
  if (n.op == ir::Op::Conv && has_kernel && n.inputs.size() > 1 && g.t(n.inputs[1]).dtype == DType::i8) {
    *handled = true;
    return prepare_qconv(g, n, at, st, workspace);
  }
  if (has_kernel && n.op != ir::Op::Conv && !n.inputs.empty() && g.t(n.inputs[0]).dtype == DType::u8) {
    *handled = true;
    return prepare_qpool(g, n, at, st);
  }
  const bool u8_out = outs && g.t(n.outputs[0]).dtype == DType::u8;
  if (n.op == ir::Op::Add && u8_out && n.attrs.count("q_a_scale")) {
    *handled = true;
    return prepare_qadd(g, n, at, st);
  }
  if (n.op == ir::Op::Mul && ins && u8_out && n.inputs.size() == 2 && n.attrs.count("q_g_scale")) {
    *handled = true;
    return prepare_qscale(g, n, at, st);
  }
  if (n.op == ir::Op::Lut && ins && u8_out && n.inputs.size() == 1 && g.t(n.inputs[0]).dtype == DType::u8) {
    *handled = true;
    return prepare_qlut(g, n, at, st);
  }
  if (n.op == ir::Op::Concat && u8_out && n.attrs.count("q_scales")) {
    *handled = true;
    return prepare_qconcat(g, n, at, st);
  }
  const bool q = n.op == ir::Op::QuantizeLinear, dq = n.op == ir::Op::DequantizeLinear;
  if ((q || dq) && ins && outs && per_tensor_params(g, n, &st->q_scale, &st->q_zp)) {
    const ir::Tensor& x = g.t(n.inputs[0]);
    const ir::Tensor& y = g.t(n.outputs[0]);
    const DType from = q ? DType::f32 : DType::u8, to = q ? DType::u8 : DType::f32;
    // A quantize may write NHWC from a plain input (passes/fuse_quantize_reorder.cc).
    const bool to_nhwc = q && x.shape.size() == 4 && x.layout == ir::Layout::plain && y.layout == ir::Layout::nhwc;
    if (x.dtype != from || y.dtype != to || x.numel() != y.numel() || (x.layout != y.layout && !to_nhwc))
      return Status::Ok();
    *handled = true;
    st->kind = q ? Session::Step::quantize : Session::Step::dequantize;
    st->q_nhwc = to_nhwc;
    if (to_nhwc)
      for (int d = 0; d < 4; ++d) st->dims[d] = x.shape[d];
    st->quant_k = kernels::quant_select(host_cpu());
    st->src = static_cast<const float*>(at(n.inputs[0]));
    st->dst = static_cast<float*>(at(n.outputs[0]));
    st->count = x.numel();
  }
  return Status::Ok();
}

}  // namespace systolic::runtime
