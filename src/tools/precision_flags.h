// The precision flags shared by compile, run, bench, classify, tune, profile and simulate:
// --precision fp32|bf16|int8 (default: int8 for a quantized model, else fp32), and for int8
// of a float model --calibration DIR|FILE...|random:N, --method, --keep-fp32.
#pragma once
#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "api/precision.h"

namespace systolic::tools {

struct PrecisionFlags {
  std::string precision;  // "" (automatic), fp32, bf16, int8
  std::vector<std::string> calibration;
  std::string method = "minmax";
  std::vector<std::string> keep_fp32;
  bool progress = false;  // a progress bar even when stderr is not a terminal
};

void add_precision_flags(CLI::App* cmd, const std::shared_ptr<PrecisionFlags>& f);

// The flags as the library takes them: calibration progress drawn on stderr (when it is a
// terminal or --progress was given) and notes printed there as "systolic: note: ...".
api::PrecisionRequest precision_request(const PrecisionFlags& f);

// Draws "systolic: WHAT [#####     ] done/total" on stderr (a newline when done).
void draw_progress(const char* what, int done, int total);

// Prints "systolic: note: TEXT" on stderr.
void print_note(const std::string& text);

}  // namespace systolic::tools
