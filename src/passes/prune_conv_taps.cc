// Kernel taps that read only padding for every output pixel add nothing: a 3x3 conv dilated by
// 36 on a 28x28 map (DeepLabV3's ASPP) reads the image through its centre tap alone. This pass
// cuts such rows and columns from the weights and the pads (the output is unchanged), so the
// conv does only the work that can be non-zero.
#include "interp/nn_geometry.h"
#include "passes/pass.h"

namespace systolic::passes {
namespace {

// The first and last taps of one axis that read inside [0, in) for some output position;
// false when none does or the valid taps are not contiguous.
bool valid_taps(int k, int in, int out, int stride, int dil, int pad, int* first, int* last) {
  *first = -1;
  *last = -1;
  for (int t = 0; t < k; ++t) {
    bool hit = false;
    for (int o = 0; o < out && !hit; ++o) {
      const long y = long(o) * stride - pad + long(t) * dil;
      hit = y >= 0 && y < in;
    }
    if (!hit) continue;
    if (*last >= 0 && *last != t - 1) return false;
    if (*first < 0) *first = t;
    *last = t;
  }
  return *first >= 0;
}

}  // namespace

Status prune_conv_taps(ir::Graph& g, PassContext&) {
  for (ir::Node& n : g.nodes) {
    if (n.op != ir::Op::Conv || n.inputs.size() < 2) continue;
    const ir::Tensor& x = g.t(n.inputs[0]);
    const ir::Tensor& w = g.t(n.inputs[1]);
    if (x.dtype != ir::DType::f32 || x.shape.size() != 4 || !w.is_const() || w.dtype != ir::DType::f32) continue;
    kernels::ConvParams p;
    if (!interp::conv_geometry(n, x.shape, w.shape, &p).ok()) continue;
    int r0, r1, c0, c1;
    if (!valid_taps(p.kh, p.ih, p.oh, p.sh, p.dh, p.pad_t, &r0, &r1) ||
        !valid_taps(p.kw, p.iw, p.ow, p.sw, p.dw, p.pad_l, &c0, &c1))
      continue;
    if (r0 == 0 && r1 == p.kh - 1 && c0 == 0 && c1 == p.kw - 1) continue;
    // New pads keep every output position reading the same input pixels.
    const int kh = r1 - r0 + 1, kw = c1 - c0 + 1;
    const int pt = p.pad_t - r0 * p.dh, pl = p.pad_l - c0 * p.dw;
    const int pb = (p.oh - 1) * p.sh + (kh - 1) * p.dh + 1 - p.ih - pt;
    const int pr = (p.ow - 1) * p.sw + (kw - 1) * p.dw + 1 - p.iw - pl;
    if (pt < 0 || pl < 0 || pb < 0 || pr < 0) continue;
    const int64_t O = w.shape[0], I = w.shape[1];
    std::vector<float> cut(static_cast<std::size_t>(O * I * kh * kw));
    const float* src = w.as<float>();
    for (int64_t o = 0; o < O * I; ++o)
      for (int i = 0; i < kh; ++i)
        for (int j = 0; j < kw; ++j)
          cut[(o * kh + i) * kw + j] = src[(o * p.kh + r0 + i) * p.kw + c0 + j];
    ir::QuantParams quant = w.quant;  // per output channel, if any: unchanged by the cut
    n.inputs[1] = g.add_const_f32(g.fresh_name(n.name + ".weight_taps"), {O, I, kh, kw}, cut);
    g.t(n.inputs[1]).quant = quant;
    n.attrs.erase("auto_pad");
    n.set_ints("kernel_shape", {kh, kw});
    n.set_ints("pads", {pt, pl, pb, pr});
  }
  return Status::Ok();
}

}  // namespace systolic::passes
