// A served model's settings: its config.json (Triton layout: DIR/NAME/config.json), then the
// saved `systolic tune` choice, then defaults. Also where a repository keeps its models.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "systolic/status.h"

namespace systolic::serve {

struct ModelSettings {
  std::string precision;           // "" automatic
  int64_t max_batch_size = 0;      // 0: tune's batch, else 8
  int64_t max_queue_delay_us = 0;  // 0: batch what is queued, without waiting
  int64_t max_queue_size = 0;      // 0: 4 x max_batch_size x instances
  int instances = 0, threads = 0;  // 0: tuned, else 1 instance on every core
  std::string preprocess;          // "imagenet": the image input may be sent as JPEG/PNG bytes
  std::string labels;              // file, one label a line (classification extension)
};

// Reads config.json; unknown keys, wrong types and out-of-range values are errors naming the
// key. `labels` is resolved against the file's directory.
Expected<ModelSettings> read_model_config(const std::string& path);
// The same from the file's text; `path` names it in errors and anchors `labels`.
Expected<ModelSettings> model_config_from_text(const std::string& text, const std::string& path);

struct ModelSource {
  std::string name, version;  // version "1" for --model NAME=PATH
  std::string path;           // model.onnx or model.plan
  ModelSettings settings;
};

// The newest version (the largest numeric directory holding model.onnx or model.plan) of model
// `name` in a Triton-layout repository, with its config.json when there is one.
Expected<ModelSource> find_model(const std::string& repository, const std::string& name);
// Every model directory in the repository (names sorted).
Expected<std::vector<std::string>> list_models(const std::string& repository);

}  // namespace systolic::serve
