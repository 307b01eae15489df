// QDQ export: a float model and its calibrated activations written in the standard QDQ ONNX
// form (what ONNX Runtime's static quantizer writes, and what ONNX Runtime, OpenVINO and
// TensorRT run as int8): a QuantizeLinear -> DequantizeLinear pair on every quantized
// activation (uint8, per tensor), convolution and Gemm/MatMul weights as int8 per output
// channel (symmetric) behind a DequantizeLinear, biases as int32 in the scale
// x_scale * w_scale. Batch norms are folded first; the rest of the graph is the model's own.
#pragma once
#include <onnx/onnx_pb.h>

#include <map>
#include <set>
#include <string>

#include "base/status.h"
#include "quantize/calibrate.h"

namespace systolic::quantize {

struct QdqExportOptions {
  std::set<std::string> keep_fp32;  // nodes whose weights stay float
  // 7-bit weights (-63..63), as ONNX Runtime's reduce_range: engines whose int8 kernels sum
  // two u8 x s8 products in 16 bits (vpmaddubsw on AVX2 without VNNI) then never saturate.
  bool reduce_range = false;
  // Symbolic dims other than the batch, bound as for a compile (the file takes these sizes).
  std::map<std::string, ir::Shape> input_shapes;
};

struct QdqExportStats {
  int activations = 0;  // Q/DQ pairs written
  int weights = 0;      // weight tensors written as int8
  // The model's batch is symbolic but a constant shape computed from it (other than a
  // Reshape's) could not be written without it: the file's batch is fixed to 1.
  bool batch_fixed = false;
};

// `ranges` are calibration results by tensor name (calibration_options() with residual
// additions apart names them as the model does).
Status export_qdq(const std::string& model_path, const QuantMap& ranges, const QdqExportOptions& o,
                  onnx::ModelProto* out, QdqExportStats* stats = nullptr);

}  // namespace systolic::quantize
