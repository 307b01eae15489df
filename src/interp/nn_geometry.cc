// ONNX's conv/pool output-size and padding rules, in one place for shape inference,
// the interpreter and lowering.
#include "interp/nn_geometry.h"

namespace systolic::interp {
namespace {

struct Axis {
  int64_t in, k, s, d, pb, pe, out;
};

Status solve_axis(const std::string& auto_pad, bool ceil_mode, Axis* a) {
  // Past 2^31 no arithmetic below is safe, and no real model comes near.
  for (int64_t v : {a->in, a->k, a->d, a->s, a->pb, a->pe})
    if (v > (int64_t{1} << 31)) return Err("a size, kernel, stride, dilation or pad past 2^31");
  const int64_t ek = (a->k - 1) * a->d + 1;
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    a->out = (a->in + a->s - 1) / a->s;
    const int64_t total = std::max<int64_t>(0, (a->out - 1) * a->s + ek - a->in);
    a->pb = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
    a->pe = total - a->pb;
  } else if (auto_pad == "VALID") {
    a->pb = a->pe = 0;
    a->out = a->in >= ek ? (a->in - ek) / a->s + 1 : 0;
  } else {
    const int64_t span = a->in + a->pb + a->pe - ek;
    if (span < 0) return Err("kernel (%lld) is larger than the padded input (%lld)",
                             static_cast<long long>(ek), static_cast<long long>(a->in + a->pb + a->pe));
    a->out = (ceil_mode ? (span + a->s - 1) / a->s : span / a->s) + 1;
    // A window may not start in the end padding (PyTorch and ONNX agree).
    if (ceil_mode && (a->out - 1) * a->s >= a->in + a->pb) --a->out;
  }
  if (a->out <= 0) return Err("output size would be %lld", static_cast<long long>(a->out));
  return Status::Ok();
}

// Resolves every spatial axis of a conv/pool node (input x: N, C, spatial...).
Status spatial_axes(const ir::Node& n, const ir::Shape& x, const std::vector<int64_t>& kernel,
                    bool ceil_mode, std::vector<Axis>* ax) {
  const std::size_t sp = x.size() - 2;
  if (kernel.size() != sp) return Err("%s %s: kernel has %zu dims, input has %zu spatial dims",
                                      ir::op_name(n.op), n.name.c_str(), kernel.size(), sp);
  auto strides = n.ints("strides", std::vector<int64_t>(sp, 1));
  auto dil = n.ints("dilations", std::vector<int64_t>(sp, 1));
  auto pads = n.ints("pads", std::vector<int64_t>(2 * sp, 0));
  if (strides.size() != sp || dil.size() != sp || pads.size() != 2 * sp)
    return Err("%s %s: strides/dilations/pads do not match the input rank", ir::op_name(n.op), n.name.c_str());
  for (std::size_t i = 0; i < sp; ++i)
    if (strides[i] <= 0 || dil[i] <= 0 || pads[i] < 0 || pads[i + sp] < 0 || kernel[i] <= 0)
      return Err("%s %s: strides, dilations and kernel must be positive, pads non-negative",
                 ir::op_name(n.op), n.name.c_str());
  std::string ap = n.s("auto_pad", "NOTSET");
  ax->assign(sp, Axis{});
  for (std::size_t i = 0; i < sp; ++i) {
    (*ax)[i] = Axis{x[2 + i], kernel[i], strides[i], dil[i], pads[i], pads[i + sp], 0};
    Status st = solve_axis(ap, ceil_mode, &(*ax)[i]);
    if (!st.ok()) return Err("%s %s: %s", ir::op_name(n.op), n.name.c_str(), st.message().c_str());
  }
  return Status::Ok();
}

// The 1-D and 2-D case, as two Axis records (H, W); 1-D is H = 1.
Status spatial(const ir::Node& n, const ir::Shape& x, const std::vector<int64_t>& kernel,
               bool ceil_mode, Axis* h, Axis* w) {
  const std::size_t sp = x.size() - 2;
  if (sp != 1 && sp != 2) return Err("%s %s: %zu-D is not supported, only 1-D, 2-D and 3-D (input %s)",
                                     ir::op_name(n.op), n.name.c_str(), sp, ir::shape_str(x).c_str());
  std::vector<Axis> ax;
  SYSTOLIC_RETURN_IF_ERROR(spatial_axes(n, x, kernel, ceil_mode, &ax));
  if (sp == 1) {
    *h = Axis{1, 1, 1, 1, 0, 0, 1};
    *w = ax[0];
  } else {
    *h = ax[0];
    *w = ax[1];
  }
  return Status::Ok();
}

std::vector<kernels::SpatialDim> to_dims(const std::vector<Axis>& ax) {
  std::vector<kernels::SpatialDim> d;
  for (const Axis& a : ax) d.push_back({a.in, a.out, a.k, a.s, a.d, a.pb, a.pe});
  return d;
}

// The checks every conv shares: ranks, input channels against weight and group, kernel_shape
// against the weight. Gives the group count and the kernel's spatial dims.
Status conv_kernel(const ir::Node& n, const ir::Shape& x, const ir::Shape& w, int64_t* groups,
                   std::vector<int64_t>* kernel) {
  if (x.size() != w.size() || x.size() < 3)
    return Err("%s %s: input %s and weight %s ranks differ", ir::op_name(n.op), n.name.c_str(),
               ir::shape_str(x).c_str(), ir::shape_str(w).c_str());
  *groups = n.i("group", 1);
  if (*groups <= 0 || x[1] % *groups || w[0] % *groups || w[1] * *groups != x[1])
    return Err("%s %s: input channels %lld, weight %s and group %lld do not agree", ir::op_name(n.op),
               n.name.c_str(), static_cast<long long>(x[1]), ir::shape_str(w).c_str(), static_cast<long long>(*groups));
  kernel->assign(w.begin() + 2, w.end());
  if (n.has("kernel_shape") && n.ints("kernel_shape") != *kernel)
    return Err("%s %s: kernel_shape does not match the weight", ir::op_name(n.op), n.name.c_str());
  return Status::Ok();
}

}  // namespace

Status conv_geometry(const ir::Node& n, const ir::Shape& x, const ir::Shape& w, kernels::ConvParams* p) {
  int64_t groups;
  std::vector<int64_t> kernel;
  SYSTOLIC_RETURN_IF_ERROR(conv_kernel(n, x, w, &groups, &kernel));
  Axis h, wa;
  SYSTOLIC_RETURN_IF_ERROR(spatial(n, x, kernel, false, &h, &wa));
  *p = kernels::ConvParams{};
  p->n = static_cast<int>(x[0]);
  p->ic = static_cast<int>(x[1]);
  p->ih = static_cast<int>(h.in);
  p->iw = static_cast<int>(wa.in);
  p->oc = static_cast<int>(w[0]);
  p->oh = static_cast<int>(h.out);
  p->ow = static_cast<int>(wa.out);
  p->kh = static_cast<int>(h.k);
  p->kw = static_cast<int>(wa.k);
  p->sh = static_cast<int>(h.s);
  p->sw = static_cast<int>(wa.s);
  p->dh = static_cast<int>(h.d);
  p->dw = static_cast<int>(wa.d);
  p->pad_t = static_cast<int>(h.pb);
  p->pad_l = static_cast<int>(wa.pb);
  p->groups = static_cast<int>(groups);
  p->src_u8 = n.i("src_u8", 0) != 0;  // set by fold_input_normalization
  return Status::Ok();
}

Status pool_geometry(const ir::Node& n, const ir::Shape& x, kernels::PoolParams* p) {
  if (x.size() < 3) return Err("%s %s: input %s has no spatial dims", ir::op_name(n.op), n.name.c_str(),
                               ir::shape_str(x).c_str());
  const bool global = n.op == ir::Op::GlobalAveragePool || n.op == ir::Op::GlobalMaxPool;
  std::vector<int64_t> kernel = global ? std::vector<int64_t>(x.begin() + 2, x.end()) : n.ints("kernel_shape");
  if (kernel.empty()) return Err("%s %s: kernel_shape is required", ir::op_name(n.op), n.name.c_str());
  // storage_order only says how the Indices output numbers positions; the values ignore it.
  const int64_t order = n.i("storage_order", 0);
  if (order != 0 && order != 1)
    return Err("%s %s: storage_order is %lld, not 0 or 1", ir::op_name(n.op), n.name.c_str(), static_cast<long long>(order));
  Axis h, w;
  ir::Node plain;  // global pools have no attributes
  SYSTOLIC_RETURN_IF_ERROR(spatial(global ? plain : n, x, kernel, n.i("ceil_mode", 0) != 0, &h, &w));
  *p = kernels::PoolParams{};
  p->kind = (n.op == ir::Op::MaxPool || n.op == ir::Op::GlobalMaxPool) ? kernels::PoolKind::max
                                                                      : kernels::PoolKind::avg;
  p->n = static_cast<int>(x[0]);
  p->c = static_cast<int>(x[1]);
  p->ih = static_cast<int>(h.in);
  p->iw = static_cast<int>(w.in);
  p->oh = static_cast<int>(h.out);
  p->ow = static_cast<int>(w.out);
  p->kh = static_cast<int>(h.k);
  p->kw = static_cast<int>(w.k);
  p->sh = static_cast<int>(h.s);
  p->sw = static_cast<int>(w.s);
  p->dh = static_cast<int>(h.d);
  p->dw = static_cast<int>(w.d);
  p->pad_t = static_cast<int>(h.pb);
  p->pad_b = static_cast<int>(h.pe);
  p->pad_l = static_cast<int>(w.pb);
  p->pad_r = static_cast<int>(w.pe);
  p->count_include_pad = n.i("count_include_pad", 0) != 0;
  return Status::Ok();
}

Status conv_volume_geometry(const ir::Node& n, const ir::Shape& x, const ir::Shape& w,
                            kernels::VolumeConvParams* p) {
  int64_t groups;
  std::vector<int64_t> kernel;
  SYSTOLIC_RETURN_IF_ERROR(conv_kernel(n, x, w, &groups, &kernel));
  std::vector<Axis> ax;
  SYSTOLIC_RETURN_IF_ERROR(spatial_axes(n, x, kernel, false, &ax));
  *p = kernels::VolumeConvParams{x[0], x[1], w[0], groups, to_dims(ax)};
  return Status::Ok();
}

Status pool_volume_geometry(const ir::Node& n, const ir::Shape& x, kernels::VolumePoolParams* p) {
  if (x.size() < 3) return Err("%s %s: input %s has no spatial dims", ir::op_name(n.op), n.name.c_str(),
                               ir::shape_str(x).c_str());
  if (pool_has_indices(n)) return Err("MaxPool %s: the Indices output of a 3-D pool is not supported", n.name.c_str());
  const bool global = n.op == ir::Op::GlobalAveragePool || n.op == ir::Op::GlobalMaxPool;
  std::vector<int64_t> kernel = global ? std::vector<int64_t>(x.begin() + 2, x.end()) : n.ints("kernel_shape");
  if (kernel.empty()) return Err("%s %s: kernel_shape is required", ir::op_name(n.op), n.name.c_str());
  std::vector<Axis> ax;
  ir::Node plain;  // global pools have no attributes
  SYSTOLIC_RETURN_IF_ERROR(spatial_axes(global ? plain : n, x, kernel, n.i("ceil_mode", 0) != 0, &ax));
  *p = kernels::VolumePoolParams{};
  p->max = n.op == ir::Op::MaxPool || n.op == ir::Op::GlobalMaxPool;
  p->count_include_pad = n.i("count_include_pad", 0) != 0;
  p->n = x[0];
  p->c = x[1];
  p->dims = to_dims(ax);
  return Status::Ok();
}

std::vector<int64_t> encode_conv_params(const kernels::ConvParams& p) {
  return {p.n, p.ih, p.iw, p.ic, p.oh, p.ow, p.oc, p.kh, p.kw, p.sh, p.sw,
          p.dh, p.dw, p.pad_t, p.pad_l, p.groups, p.src_stride, p.dst_stride, p.res_stride, p.src_u8};
}

bool decode_conv_params(const std::vector<int64_t>& v, kernels::ConvParams* p) {
  if (v.size() != 20) return false;
  int* f[] = {&p->n, &p->ih, &p->iw, &p->ic, &p->oh, &p->ow, &p->oc, &p->kh, &p->kw, &p->sh, &p->sw,
              &p->dh, &p->dw, &p->pad_t, &p->pad_l, &p->groups, &p->src_stride, &p->dst_stride, &p->res_stride,
              &p->src_u8};
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] < 0 || v[i] > (int64_t{1} << 30)) return false;
    *f[i] = static_cast<int>(v[i]);
  }
  return p->src_u8 <= 1 && p->n > 0 && p->ic > 0 && p->oc > 0 && p->groups > 0 && p->kh > 0 && p->kw > 0 && p->sh > 0 &&
         p->sw > 0 && p->dh > 0 && p->dw > 0 && p->ic % p->groups == 0 && p->oc % p->groups == 0;
}

}  // namespace systolic::interp
