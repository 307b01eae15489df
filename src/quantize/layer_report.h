// Per-layer accuracy of a quantized plan: every tensor the int8 plan computes that the float
// plan also computes (same name) is compared, uint8 ones dequantized, as a
// signal-to-quantization-noise ratio, 10 log10(sum ref^2 / sum (ref - q)^2). Which layers hurt
// is what --keep-fp32 is for.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "plan/program.h"
#include "quantize/calibrate.h"

namespace systolic::quantize {

struct LayerError {
  std::string node;    // the int8 plan's node that wrote the tensor
  std::string op;
  std::string tensor;
  bool int8 = false;   // computed by an int8 kernel (else float code of the int8 plan)
  double sqnr_db = 0;  // +inf when equal
  double max_abs = 0;
};

// A tensor as a session observer sees it (as the plan stores it), as float values in the
// model's order: uint8 dequantized with its per-tensor parameters, NHWC put back in NCHW. An
// error for other element types.
Status model_order_floats(const ir::Tensor& t, const void* data, std::vector<float>* out);

// Runs both plans on the samples `load` gives (made for the float plan's inputs; the plans
// must take the same inputs) and reports the int8 plan's convolutions in plan order.
Expected<std::vector<LayerError>> layer_report(std::shared_ptr<const plan::Program> fp32,
                                               std::shared_ptr<const plan::Program> int8, const SampleLoader& load,
                                               int threads = 0);

}  // namespace systolic::quantize
