// float16 and bfloat16 models compute in float32: see half_precision.cc.
#pragma once
#include <map>

#include "base/status.h"
#include "ir/graph.h"

namespace systolic::frontend {

// Rewrites an imported graph so that nothing computes in a half type: a half input is cast to
// float32 where it enters, a Cast (or CastLike) to a half type keeps its rounding and is cast
// back to float32 for its readers, and an output declared half (`half_outputs`: tensor id ->
// its type) is cast from the float32 value that computes it. Half constants were widened when
// read (tensor_proto.cc). The answers are those of the model computed in float32, rounded
// exactly where the model rounds to a half type. `half_consts`: the constants that were half
// (a CastLike to their type rounds to it).
Status compute_half_in_f32(ir::Graph& g, const std::map<int, ir::DType>& half_outputs,
                           const std::map<int, ir::DType>& half_consts = {});

}  // namespace systolic::frontend
