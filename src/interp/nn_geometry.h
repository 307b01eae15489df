// Conv and pool geometry from an ONNX node and its input shapes: pads (incl. auto_pad),
// strides, dilations, output size (incl. ceil_mode). 1-D ops are the H=1 case of 2-D; 3-D ops
// have their own parameters.
#pragma once
#include "base/status.h"
#include "ir/graph.h"
#include "kernels/conv/conv.h"
#include "kernels/pool/pool.h"
#include "kernels/volume/volume.h"

namespace systolic::interp {

Status conv_geometry(const ir::Node& n, const ir::Shape& x, const ir::Shape& w, kernels::ConvParams* p);
Status pool_geometry(const ir::Node& n, const ir::Shape& x, kernels::PoolParams* p);
// A MaxPool that also yields ONNX's Indices output: the interpreter runs it (NCHW, float), and
// since the indices count from the batch's first item, it is not a per-item op.
inline bool pool_has_indices(const ir::Node& n) {
  return n.op == ir::Op::MaxPool && n.outputs.size() > 1 && n.outputs[1] >= 0;
}

// 3-D convs and pools (a rank-5 input: video clips, volumes) run on the N-D reference kernels
// (kernels/volume): every spatial axis resolved. They take any rank the 2-D forms take too.
inline bool is_volume(const ir::Shape& x) { return x.size() == 5; }
Status conv_volume_geometry(const ir::Node& n, const ir::Shape& x, const ir::Shape& w, kernels::VolumeConvParams* p);
Status pool_volume_geometry(const ir::Node& n, const ir::Shape& x, kernels::VolumePoolParams* p);

// ConvParams as a flat list (stored as a node attribute in the plan) and back.
std::vector<int64_t> encode_conv_params(const kernels::ConvParams& p);
bool decode_conv_params(const std::vector<int64_t>& v, kernels::ConvParams* p);

}  // namespace systolic::interp
