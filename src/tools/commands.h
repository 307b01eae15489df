// Subcommands of the systolic CLI; each file registers one, over the library.
#pragma once
#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "base/status.h"
#include "ir/preprocess.h"
#include "plan/program.h"
#include "runtime/session.h"
#include "tools/precision_flags.h"

namespace systolic::tools {

void register_commands(CLI::App& app);
void register_zoo(CLI::App& app);
void register_compile(CLI::App& app);
void register_run(CLI::App& app);
void register_bench(CLI::App& app);
void register_onnx_suite(CLI::App& app);
void register_info(CLI::App& app);
void register_simulate(CLI::App& app);
void register_profile(CLI::App& app);
void register_classify(CLI::App& app);
void register_preprocess(CLI::App& app);
void register_tune(CLI::App& app);
void register_quantize(CLI::App& app);
void register_compare(CLI::App& app);
void register_serve(CLI::App& app);

// Exit status of the command that ran (set by fail()).
int exit_code();
// Prints "systolic: error: MSG" on stderr and makes the process exit non-zero.
void fail(const Status& st);

// Whether the file starts with the plan file's magic (else it is taken as ONNX).
bool is_plan_file(const std::string& path);

// A model given as .onnx (imported and compiled for `batch`) or as a compiled .plan.
struct ModelOptions {
  int64_t batch = 0;       // 0: the plan's, or 1 for an .onnx with a symbolic batch dim
  int64_t micro_batch = 0; // --micro-batch (0: the compiler chooses)
  bool optimize = true;
  bool cache = true;       // use the compile cache (api/compile_cache.h) for an .onnx
  ir::ImagePreprocess preprocess;  // for an .onnx; a .plan must have been compiled with the same
  PrecisionFlags precision;        // for an .onnx; a .plan's is checked against it
  std::map<std::string, ir::Shape> input_shapes;  // --shape; a .plan's inputs are checked against it
};
// Opens it through the library (api/internal.h; no tuned defaults: the commands apply and
// announce those) and prints what the compile cache did on stderr ("systolic: using cached
// plan ..." or "systolic: compiled in X ms; cached as ...").
Expected<std::shared_ptr<const plan::Program>> load_model(const std::string& path, const ModelOptions& opts);
// load_model, then a Session on `threads` threads (0: one per core).
Expected<std::unique_ptr<runtime::Session>> open_session(const std::string& path, const ModelOptions& opts,
                                                         int threads);

}  // namespace systolic::tools
