// IR graph -> ONNX model: standard ONNX nodes and attributes, constants as initializers,
// inputs and outputs typed. Graphs of the importer's form (before fusion and layouts) export;
// a node carrying the compiler's internal attributes (fused epilogues, kernels) does not.
#pragma once
#include <onnx/onnx_pb.h>

#include <map>
#include <string>

#include "base/status.h"
#include "ir/graph.h"

namespace systolic::frontend {

struct ExportOptions {
  int opset = 13;
  std::string producer = "systolic";
  // Dims to write for graph inputs/outputs by name (a symbolic batch: -1 becomes "batch").
  std::map<std::string, ir::Shape> io_shapes;
};

Status export_onnx(const ir::Graph& g, const ExportOptions& o, onnx::ModelProto* model);

}  // namespace systolic::frontend
