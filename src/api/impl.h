// What a Model and a Session hold: shared by the library's files, not part of the public API.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "plan/program.h"
#include "runtime/session.h"
#include "systolic/systolic.h"

namespace systolic {

struct Model::Impl {
  std::string path;
  std::shared_ptr<const plan::Program> program;
  std::vector<TensorSpec> inputs, outputs;
  int threads = 1, instances = 1;
  ImageSpec image;
  LoadReport report;
  // Computed on first use by a session (preparing one costs an arena; open does not need it).
  mutable std::once_flag flops_once;
  mutable double flops = 0;
};

struct Session::Impl {
  std::shared_ptr<const Model::Impl> model;  // the specs; keeps the program alive
  std::unique_ptr<runtime::Session> session;
};

}  // namespace systolic
