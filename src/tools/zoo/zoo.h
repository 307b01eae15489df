// The model zoo: torchvision CNN architectures written as standard ONNX with seeded weights.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace onnx {
class ModelProto;
}

namespace systolic::zoo {

// Names accepted by zoo_build, e.g. "resnet18", "resnet50", "mobilenet_v2".
std::vector<std::string> zoo_names();

// Builds the model `name` (opset 13, input "input" float[batch,3,224,224], output "logits"
// float[batch,1000]; batch is a symbolic dim "N") with deterministic weights from `seed`.
Status zoo_build(const std::string& name, uint64_t seed, onnx::ModelProto* model);

}  // namespace systolic::zoo
