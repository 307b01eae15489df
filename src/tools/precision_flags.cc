// The precision flags and how their progress and notes are shown.
#include "tools/precision_flags.h"

#include <unistd.h>

#include <cstdio>

namespace systolic::tools {

void draw_progress(const char* what, int done, int total) {
  const int width = 30, fill = total > 0 ? done * width / total : width;
  std::fprintf(stderr, "\rsystolic: %s [%s%s] %d/%d", what, std::string(fill, '#').c_str(),
               std::string(width - fill, ' ').c_str(), done, total);
  if (done == total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

void print_note(const std::string& text) { std::fprintf(stderr, "systolic: note: %s\n", text.c_str()); }

void add_precision_flags(CLI::App* cmd, const std::shared_ptr<PrecisionFlags>& f) {
  cmd->add_option("--precision", f->precision,
                  "fp32 | bf16 | int8 (default: int8 for a quantized QDQ model, else fp32)")
      ->check(CLI::IsMember({"fp32", "bf16", "int8"}));
  cmd->add_option("--calibration", f->calibration,
                  "int8 of a float model: calibration images or tensors (folders, .jpg/.png/.npy/.pb files) or random:N");
  cmd->add_option("--method", f->method, "calibration: minmax | percentile | entropy (default minmax)")
      ->check(CLI::IsMember({"minmax", "percentile", "entropy"}));
  cmd->add_option("--keep-fp32", f->keep_fp32, "int8: nodes to leave in float (comma-separated names)")->delimiter(',');
}

api::PrecisionRequest precision_request(const PrecisionFlags& f) {
  api::PrecisionRequest r;
  r.precision = f.precision;
  r.calibration = f.calibration;
  r.method = f.method;
  r.keep_fp32 = f.keep_fp32;
  if (f.progress || isatty(STDERR_FILENO))
    r.progress = [](int done, int total) { draw_progress("calibrating", done, total); };
  r.note = print_note;
  return r;
}

}  // namespace systolic::tools
