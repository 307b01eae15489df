// Checks a plan's steps against their tensors before a kernel is handed pointers:
// a corrupt or hostile plan must be an error, never an out-of-bounds access.
#include "interp/nn_geometry.h"
#include "runtime/session_step.h"

namespace systolic::runtime {

Status check_conv_step(const ir::Graph& g, const ir::Node& n, const kernels::ConvParams& p, std::size_t src_elem,
                       std::size_t dst_elem, std::size_t res_elem) {
  auto corrupt = [&](const char* what) { return Err("plan is corrupt: conv %s: %s", n.name.c_str(), what); };
  // The geometry must be what the node's attributes give for its input (as at compile time):
  // the kernels trust it (a 1x1 conv reads the input as a dense [pixels, channels] matrix).
  const ir::Shape& xs = g.t(n.inputs[0]).shape;
  ir::Shape ws = {p.oc, p.ic / p.groups};
  if (xs.size() == 4) ws.insert(ws.end(), {p.kh, p.kw});
  else ws.push_back(int64_t{p.kh} * p.kw);
  kernels::ConvParams q;
  if (!interp::conv_geometry(n, xs, ws, &q).ok()) return corrupt("its attributes do not fit its input");
  if (q.n != p.n || q.ih != p.ih || q.iw != p.iw || q.ic != p.ic || q.oh != p.oh || q.ow != p.ow || q.oc != p.oc ||
      q.kh != p.kh || q.kw != p.kw || q.sh != p.sh || q.sw != p.sw || q.dh != p.dh || q.dw != p.dw ||
      q.pad_t != p.pad_t || q.pad_l != p.pad_l || q.groups != p.groups)
    return corrupt("its parameters disagree with its attributes and input");
  // A pixel stride (a view into a wider buffer) must keep every access inside the arena.
  auto strided = [&](int id, int stride, int channels, int64_t pixels, std::size_t elem) {
    if (id < 0 || stride == 0) return true;
    const ir::Tensor& t = g.t(id);
    if (stride < channels || t.arena_offset < 0) return false;
    const int64_t extent = ((pixels - 1) * stride + channels) * static_cast<int64_t>(elem);
    return extent <= g.arena_bytes - t.arena_offset;
  };
  const int64_t in_px = int64_t{p.n} * p.ih * p.iw, out_px = int64_t{p.n} * p.oh * p.ow;
  if (!strided(n.inputs[0], p.src_stride, p.ic, in_px, src_elem) ||
      !strided(n.outputs[0], p.dst_stride, p.oc, out_px, dst_elem) ||
      !strided(n.in(3), p.res_stride, p.oc, out_px, res_elem ? res_elem : dst_elem))
    return corrupt("a pixel stride reaches past its buffer");
  return Status::Ok();
}

Status check_pool_step(const ir::Graph& g, const ir::Node& n, const kernels::PoolParams& p) {
  if (g.t(n.outputs[0]).numel() != int64_t{p.n} * p.c * p.oh * p.ow)
    return Err("plan is corrupt: pool %s does not match its output", n.name.c_str());
  return Status::Ok();
}

Status check_storage(const ir::Graph& g) {
  auto stored = [&](int id) { return id < 0 || g.t(id).is_const() || g.t(id).arena_offset >= 0 || g.t(id).bytes() == 0; };
  for (const ir::Node& n : g.nodes)
    for (const auto* ids : {&n.inputs, &n.outputs})
      for (int id : *ids)
        if (!stored(id))
          return Err("plan is corrupt: tensor %s of %s %s has no storage", g.t(id).name.c_str(), ir::op_name(n.op),
                     n.name.c_str());
  for (int id : g.outputs)
    if (!stored(id)) return Err("plan is corrupt: output %s has no storage", g.t(id).name.c_str());
  // A step's output may share its input's bytes only as the memory plan shares them: a view
  // (the step copies nothing) and an int8 conv written over its residual (each byte read just
  // before it is written). Any other overlap would have the kernels and copies read what they
  // are overwriting (memcpy over overlapping ranges is undefined).
  auto range = [&](int id, int64_t* lo, int64_t* hi) {
    if (id < 0 || g.t(id).is_const() || g.t(id).arena_offset < 0 || g.t(id).bytes() == 0) return false;
    *lo = g.t(id).arena_offset, *hi = *lo + static_cast<int64_t>(g.t(id).bytes());
    return true;
  };
  for (const ir::Node& n : g.nodes) {
    const bool view = n.op == ir::Op::Reshape || n.op == ir::Op::Flatten || n.op == ir::Op::Squeeze ||
                      n.op == ir::Op::Unsqueeze || n.op == ir::Op::Identity || n.op == ir::Op::Reorder ||
                      (n.op == ir::Op::Transpose && n.i("nhwc_view", 0));
    const bool qconv = n.op == ir::Op::Conv && n.s("kernel", "").starts_with("qconv_");
    for (int o : n.outputs) {
      int64_t olo, ohi;
      if (!range(o, &olo, &ohi)) continue;
      for (std::size_t k = 0; k < n.inputs.size(); ++k) {
        int64_t ilo, ihi;
        if (!range(n.inputs[k], &ilo, &ihi) || ihi <= olo || ohi <= ilo) continue;
        const bool same = ilo == olo && ihi == ohi;
        if (same && ((view && k == 0) || (qconv && k == 3))) continue;
        return Err("plan is corrupt: %s %s writes %s over its input %s", ir::op_name(n.op), n.name.c_str(),
                   g.t(o).name.c_str(), g.t(n.inputs[k]).name.c_str());
      }
    }
  }
  return Status::Ok();
}

}  // namespace systolic::runtime
