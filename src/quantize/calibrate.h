// Calibration: runs a float plan over sample inputs and turns every activation's observed
// values into uint8 quantization parameters (asymmetric, per tensor, zero exactly
// representable): the whole range (minmax), a percentile of it, or the range whose
// quantization loses the least information (entropy, the KL-divergence search TensorRT uses).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"
#include "plan/program.h"
#include "runtime/host_tensor.h"
#include "runtime/session.h"

namespace systolic::quantize {

enum class Method { minmax, percentile, entropy };
// "minmax", "percentile", "entropy"; false for anything else.
bool parse_method(const std::string& s, Method* m);

using QuantMap = std::map<std::string, ir::QuantParams>;

struct CalibrationOptions {
  Method method = Method::minmax;
  double percentile = 99.999;  // of |x|'s distribution, both tails (method percentile)
  int threads = 0;             // 0: one per core
  // Called after each sample set with (done, total) (a progress bar).
  std::function<void(int, int)> progress;
};

// The uint8 parameters of the range [lo, hi] widened to hold 0: scale (hi - lo) / 255 and an
// integer zero point, so real 0 is exact (padding, ReLU).
ir::QuantParams uint8_params(float lo, float hi);

// The input sets calibration runs, made for the plan's inputs (one HostTensor per input, in
// order, shaped as runtime::Session::inputs() says).
using SampleLoader =
    std::function<Expected<std::vector<std::vector<runtime::HostTensor>>>(const std::vector<runtime::TensorInfo>&)>;

// Runs `fp32` (a float plan) on every input set `load` gives and returns parameters for every
// float activation it computed, by tensor name.
Expected<QuantMap> calibrate(std::shared_ptr<const plan::Program> fp32, const SampleLoader& load,
                             const CalibrationOptions& o);

// The float plan calibration runs for a target int8 compile: the same options in fp32, with
// residual additions kept apart so the convolutions' own outputs are measured too.
plan::CompileOptions calibration_options(const plan::CompileOptions& target);

}  // namespace systolic::quantize
