// What in-tree code (the CLI, the server) may use beyond the public API: the compiled program
// behind a Model, the runtime session behind a Session, and opening with options only the CLI
// has (custom preprocessing, the reference plan, progress and notes as they happen).
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "ir/preprocess.h"
#include "plan/program.h"
#include "runtime/session.h"
#include "systolic/systolic.h"

namespace systolic::api {

// Whether the file starts with the plan file's magic (else it is taken as ONNX).
bool is_plan_file(const std::string& path);

struct OpenExtras {
  bool optimize = true;  // false: the reference executor's plan (plain layouts, reference kernels)
  // Instead of ModelOptions::preprocess (a named preset): any resize, crop, mean and std.
  std::optional<ir::ImagePreprocess> preprocess;
  std::function<void(int done, int total)> progress;  // int8 calibration
  std::function<void(const std::string&)> note;       // each note as it comes (also in report().notes)
};
Expected<std::shared_ptr<Model>> open_model(const std::string& path, const ModelOptions& opts, const OpenExtras& extras);

// A Model around a program compiled or loaded elsewhere (special compile options): batch and
// precision are the program's; threads and instances from `opts` (0: every core, 1).
Expected<std::shared_ptr<Model>> wrap_program(std::shared_ptr<const plan::Program> program, const std::string& path,
                                              const ModelOptions& opts = {}, LoadReport report = {});

std::shared_ptr<const plan::Program> program(const Model& m);
runtime::Session& runtime_session(Session& s);

}  // namespace systolic::api
