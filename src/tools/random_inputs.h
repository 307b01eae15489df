// Deterministic pseudo-random N(0,1) inputs for a session's inputs (run/bench without data).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "runtime/host_tensor.h"
#include "runtime/session.h"

namespace systolic::tools {

runtime::HostTensor random_tensor(const runtime::TensorInfo& info, uint64_t seed);

}  // namespace systolic::tools
