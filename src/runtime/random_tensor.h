// Deterministic pseudo-random tensors (runs without data, calibration on random inputs):
// N(0,1) floats, small integers, uniform 0..255 uint8 image pixels.
#pragma once
#include <cstdint>

#include "runtime/host_tensor.h"
#include "runtime/session.h"

namespace systolic::runtime {

HostTensor random_tensor(const TensorInfo& info, uint64_t seed);

}  // namespace systolic::runtime
