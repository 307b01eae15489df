// The precision a model is compiled for: fp32, bf16 or int8 (automatic: int8 for a quantized
// model, else fp32), and for int8 of a float model the calibration a compile runs on a cache miss.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "base/status.h"
#include "ir/preprocess.h"
#include "plan/program.h"

namespace systolic::api {

struct PrecisionRequest {
  std::string precision;  // "" (automatic), fp32, bf16, int8
  std::vector<std::string> calibration;  // directories, .jpg/.png/.npy/.pb files, random:N
  std::string method = "minmax";         // minmax, percentile, entropy
  std::vector<std::string> keep_fp32;    // node names left in float
  std::function<void(int done, int total)> progress;  // calibration progress (null: none)
  std::function<void(const std::string&)> note;       // what the user should know (null: dropped)
};

// Sets the precision fields of `co`. int8 of a float model calibrates when a compile runs:
// on `calibration` (images take `image`'s preprocessing), or on 16 random inputs with a note
// that accuracy needs real data.
Status apply_precision(const PrecisionRequest& r, const ir::ImagePreprocess& image, plan::CompileOptions* co);

// Whether a compiled plan agrees with the request (a .plan's precision is fixed).
Status check_plan_precision(const PrecisionRequest& r, const plan::Program& p, const std::string& path);

// The precision a model runs in, known before compiling it: `requested` when given, a compiled
// plan's own, int8 for a quantized (QDQ) ONNX model, else fp32 (compile's automatic choice).
// An unreadable model gives fp32: loading it says what is wrong.
std::string model_precision(const std::string& model_path, const std::string& requested);

}  // namespace systolic::api
