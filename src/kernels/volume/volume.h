// Convolution and pooling over any number of spatial dims, float, plain N, C, spatial... layout:
// the reference for 3-D ops (video and volume models: Conv3d, MaxPool3d, AvgPool3d). The
// interpreter runs them; compiled plans lower 3-D convs onto the 2-D kernels
// (passes/conv3d_to_conv2d.cc), whose answers these check.
#pragma once
#include <cstdint>
#include <vector>

namespace systolic::kernels {

// One spatial axis: input and output sizes, kernel, stride, dilation, pads (begin, end).
struct SpatialDim {
  int64_t in = 1, out = 1, k = 1, s = 1, d = 1, pad_begin = 0, pad_end = 0;
};

struct VolumeConvParams {
  int64_t n = 1, ic = 1, oc = 1, groups = 1;
  std::vector<SpatialDim> dims;
};

// y[n, oc, o...] = bias[oc] + sum over the group's input channels and the kernel window of
// x * w (w: [oc, ic / groups, k...]); the sum in double, as conv_ref_nchw's.
void conv_volume_ref(const VolumeConvParams&, const float* x, const float* w, const float* bias, float* y);

struct VolumePoolParams {
  bool max = true;                 // else average
  bool count_include_pad = false;  // average: divide by the window's positions inside the pads too
  int64_t n = 1, c = 1;
  std::vector<SpatialDim> dims;
};

// ONNX MaxPool / AveragePool (a NaN never wins a max; an average divides by the positions inside
// the input, or inside input and pads, never by the ceil_mode overhang past the end pad).
void pool_volume_ref(const VolumePoolParams&, const float* x, float* y);

}  // namespace systolic::kernels
