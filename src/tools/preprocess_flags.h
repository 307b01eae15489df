// The image-preprocessing flags shared by compile, run, bench and classify:
// --preprocess imagenet | --mean R,G,B --std R,G,B, with --resize N and --crop N|HxW.
#pragma once
#include <CLI/CLI.hpp>

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "ir/preprocess.h"

namespace systolic::tools {

struct PreprocessFlags {
  std::string preset;  // "", "none" or "imagenet"
  std::vector<float> mean, std;
  int resize = 0;
  std::string crop;
};

void add_preprocess_flags(CLI::App* cmd, const std::shared_ptr<PreprocessFlags>& f);
// The requested preprocessing (disabled when no flag asked for it), or an error naming the flag.
Expected<ir::ImagePreprocess> resolve_preprocess(const PreprocessFlags& f);
// One line for reports: "resize 256, center-crop 224x224, mean [...], std [...]".
std::string describe(const ir::ImagePreprocess& p);

}  // namespace systolic::tools
