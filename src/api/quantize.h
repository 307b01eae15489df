// `systolic quantize`'s library part: a float model calibrated on sample data (for an int8
// plan, or for the QDQ .onnx), and the QDQ .onnx written from its ranges. The CLI and Python
// choose the output and print.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "api/precision.h"
#include "base/status.h"
#include "ir/graph.h"
#include "ir/preprocess.h"
#include "plan/program.h"
#include "quantize/calibrate.h"
#include "quantize/calibration_data.h"
#include "quantize/qdq_export.h"

namespace systolic::api {

struct QuantizeRequest {
  // calibration, method, keep_fp32, progress (the precision is int8 whatever it says)
  PrecisionRequest precision;
  ir::ImagePreprocess preprocess;  // of calibration images; an int8 plan is compiled with it
  int64_t batch = 1;
  std::map<std::string, ir::Shape> input_shapes;  // symbolic dims other than the batch, bound
  bool qdq = false;  // the target is the QDQ model's float-input graph (no preprocessing)
};

struct Calibrated {
  ir::Graph graph;           // the imported float model
  plan::CompileOptions co;   // the int8 plan's options, with the calibrated ranges in
  quantize::QuantMap ranges;
};

// Imports `model`, refuses one already quantized, calibrates it. Calibration notes (skipped
// images) are appended to *notes even when calibration fails.
Expected<Calibrated> calibrate_model(const std::string& model, const QuantizeRequest& r,
                                     std::vector<std::string>* notes);

// The samples calibration used, at most `limit` (0: all): for the CLI's per-layer report.
Expected<std::vector<std::vector<runtime::HostTensor>>> calibration_samples(const QuantizeRequest& r,
                                                                          const plan::CompileOptions& co,
                                                                          const std::vector<runtime::TensorInfo>& inputs,
                                                                          int limit, std::vector<std::string>* notes);

// The QDQ .onnx of `model` with the calibrated ranges, written to `out` (symbolic dims other
// than the batch bound to `input_shapes` where given: the file then takes those sizes).
Status write_qdq(const std::string& model, const quantize::QuantMap& ranges, const std::vector<std::string>& keep_fp32,
                 bool reduce_range, const std::string& out, quantize::QdqExportStats* stats,
                 const std::map<std::string, ir::Shape>& input_shapes = {});

}  // namespace systolic::api
