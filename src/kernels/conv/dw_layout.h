// The depthwise kernels' packed weight layout, shared with the cost model (sim/host_dw.h).
#pragma once

namespace systolic::kernels::dw {

constexpr int kChannelPad = 16;  // packed channel rows are padded to this (both ISAs)
constexpr int padded(int c) { return (c + kChannelPad - 1) / kChannelPad * kChannelPad; }

}  // namespace systolic::kernels::dw
