// Deterministic pseudo-random inputs for a session (run/bench without data): N(0,1) floats,
// small integers, uniform 0..255 uint8 image pixels.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/host_tensor.h"
#include "runtime/random_tensor.h"
#include "runtime/session.h"

namespace systolic::api {

using runtime::random_tensor;

// Caller-owned buffers for Session::run_into: random inputs (seeds first_seed, +1, ...) and
// output tensors, with the pointer lists in the session's order.
struct IoBuffers {
  std::vector<runtime::HostTensor> in, out;
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;
};
IoBuffers make_io_buffers(const runtime::Session& s, uint64_t first_seed);

}  // namespace systolic::api
