// The precision flags shared by compile, run, bench, classify, tune, profile and simulate:
// --precision fp32|bf16|int8 (default: int8 for a quantized model, else fp32), and for int8
// of a float model --calibration DIR|FILE...|random:N, --method, --keep-fp32.
#pragma once
#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "ir/preprocess.h"
#include "plan/program.h"

namespace systolic::tools {

struct PrecisionFlags {
  std::string precision;  // "" (automatic), fp32, bf16, int8
  std::vector<std::string> calibration;
  std::string method = "minmax";
  std::vector<std::string> keep_fp32;
  bool progress = false;  // a progress bar even when stderr is not a terminal
};

void add_precision_flags(CLI::App* cmd, const std::shared_ptr<PrecisionFlags>& f);

// Sets the precision fields of `co`. int8 of a float model calibrates when a compile runs:
// on --calibration's data (images take `image`'s preprocessing), or on 16 random inputs
// with a note on stderr that accuracy needs real data.
Status apply_precision(const PrecisionFlags& f, const ir::ImagePreprocess& image, plan::CompileOptions* co);

// Draws "systolic: WHAT [#####     ] done/total" on stderr (a newline when done).
void draw_progress(const char* what, int done, int total);

// Whether a compiled plan agrees with the flags (a .plan's precision is fixed).
Status check_plan_precision(const PrecisionFlags& f, const plan::Program& p, const std::string& path);

}  // namespace systolic::tools
