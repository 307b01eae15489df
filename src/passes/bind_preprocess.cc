// Image-input binding: when the plan is compiled with preprocessing, the model's float image
// input becomes a uint8 image batch (stored NHWC, as decoded) feeding one NormalizeImage node
// that computes what the model used to receive. Resolves the crop and resize sizes.
#include <cmath>

#include "passes/pass.h"

namespace systolic::passes {
namespace {

ir::Attr floats_attr(const std::vector<float>& v) {
  ir::Attr a;
  a.kind = ir::Attr::floats;
  a.floats_v = v;
  return a;
}

}  // namespace

Status bind_preprocess(ir::Graph& g, PassContext& ctx) {
  ir::ImagePreprocess& pre = ctx.preprocess;
  if (!pre.enabled()) return Status::Ok();
  const int64_t channels = static_cast<int64_t>(pre.mean.size());
  if (pre.std.size() != pre.mean.size())
    return Err("preprocessing: %zu mean values but %zu std values", pre.mean.size(), pre.std.size());
  for (float s : pre.std)
    if (!(s > 0.f) || !std::isfinite(s)) return Err("preprocessing: std values must be positive");
  for (float m : pre.mean)
    if (!std::isfinite(m)) return Err("preprocessing: mean values must be finite");
  if (channels != 3) return Err("preprocessing: images are RGB; give 3 mean and std values, not %lld",
                                static_cast<long long>(channels));
  if (g.inputs.size() != 1)
    return Err("preprocessing needs a model with one image input; this one has %zu inputs", g.inputs.size());
  const int x = g.inputs[0];
  ir::Tensor& in = g.t(x);
  if (!in.shape_known || in.shape.size() != 4 || in.dtype != ir::DType::f32)
    return Err("preprocessing needs a float [N,3,H,W] image input; input %s is %s%s", in.name.c_str(),
               ir::dtype_name(in.dtype), ir::shape_str(in.shape).c_str());
  if (in.shape[1] != channels)
    return Err("preprocessing makes %lld-channel images; input %s has %lld channels (%s)",
               static_cast<long long>(channels), in.name.c_str(), static_cast<long long>(in.shape[1]),
               ir::shape_str(in.shape).c_str());
  // The crop is the model's input size; a model with symbolic H and W takes the requested crop.
  for (int d : {2, 3}) {
    int& crop = d == 2 ? pre.crop_h : pre.crop_w;
    if (in.shape[d] >= 0) {
      if (crop > 0 && crop != in.shape[d])
        return Err("preprocessing: the crop is %dx%d but input %s is %s; crop to the model's size", pre.crop_h,
                   pre.crop_w, in.name.c_str(), ir::shape_str(in.shape).c_str());
      crop = static_cast<int>(in.shape[d]);
    } else if (crop <= 0) {
      return Err("preprocessing: input %s has a symbolic size %s; give the crop size", in.name.c_str(),
                 ir::shape_str(in.shape).c_str());
    } else {
      in.shape[d] = crop;
    }
  }
  if (pre.resize <= 0) pre.resize = static_cast<int>(std::lround(std::max(pre.crop_h, pre.crop_w) / 0.875));
  if (pre.crop_h > pre.resize || pre.crop_w > pre.resize)
    return Err("preprocessing: a %dx%d crop does not fit an image resized to a shorter side of %d", pre.crop_h,
               pre.crop_w, pre.resize);
  // The float tensor keeps its consumers and becomes NormalizeImage's output; the graph input
  // is a new uint8 tensor under the model's input name.
  ir::Tensor image = in;
  in.name = g.fresh_name(in.name + ".normalized");
  image.dtype = ir::DType::u8;
  image.layout = ir::Layout::nhwc;
  const int u8 = g.add_tensor(std::move(image));
  g.inputs[0] = u8;
  ir::Node n;
  n.op = ir::Op::NormalizeImage;
  n.name = g.t(x).name;
  n.attrs["mean"] = floats_attr(pre.mean);
  n.attrs["std"] = floats_attr(pre.std);
  n.set_i("out_nhwc", 0);
  n.inputs = {u8};
  n.outputs = {x};
  g.nodes.insert(g.nodes.begin(), std::move(n));
  return Status::Ok();
}

}  // namespace systolic::passes
