// Conversion of ONNX TensorProto to IR tensors (typed fields, raw data, external data).
#pragma once
#include <onnx/onnx_pb.h>

#include <string>

#include "base/status.h"
#include "ir/graph.h"

namespace systolic::frontend {

// base_dir resolves external data locations; empty means none allowed.
Expected<ir::Tensor> tensor_from_proto(const onnx::TensorProto& tp, const std::string& base_dir);
void tensor_to_proto(const ir::Tensor& t, onnx::TensorProto* tp);

}  // namespace systolic::frontend
