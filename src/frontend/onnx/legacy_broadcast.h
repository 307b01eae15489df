// Binary ops before opset 7 broadcast by an attribute rule: see legacy_broadcast.cc.
#pragma once
#include <functional>
#include <string>
#include <unordered_map>

#include "base/status.h"
#include "ir/graph.h"

namespace onnx {
class ModelProto;
}

namespace systolic::frontend {

// The rank of every value of `model` that ONNX's shape inference can type, by name; empty when
// no node uses the legacy rule with an `axis` (only then is a computed value's rank needed).
std::unordered_map<std::string, int> legacy_broadcast_ranks(const onnx::ModelProto& model);

// Rewrites node `n` (imported, not yet in `g`) from the legacy (`broadcast`, `axis`) rule into
// multidirectional broadcasting: B is aligned with A's dims from `axis` on, so trailing unit
// dims are appended to B (a reshaped constant, or an Unsqueeze node added to `g` before `n`).
// Gemm's legacy `broadcast` of C is what its opset-7 form does anyway. `rank_of(i)` gives the
// rank of the node's input i, or -1; an unknown rank where one is needed is an error naming the
// node. A node without a `broadcast` attribute is left as it is.
Status unlegacy_broadcast(ir::Graph& g, ir::Node& n, const std::function<int(int)>& rank_of);

}  // namespace systolic::frontend
