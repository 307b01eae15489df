// ONNX frontend: reads a model file (with external data) into the IR, normalizing older
// opsets to the opset-13 form, and rejects what systolic cannot run with one error naming
// every unsupported op.
#pragma once
#include <string>

#include "base/status.h"
#include "ir/graph.h"

namespace systolic::frontend {

Expected<ir::Graph> import_onnx_file(const std::string& path);
Expected<ir::Graph> import_onnx_bytes(const std::string& bytes, const std::string& base_dir);

}  // namespace systolic::frontend
