// The commands' name for the library's random inputs (api/random_inputs.h).
#pragma once
#include "api/random_inputs.h"

namespace systolic::tools {
using api::IoBuffers;
using api::make_io_buffers;
using runtime::random_tensor;
}  // namespace systolic::tools
