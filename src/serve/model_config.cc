#include "serve/model_config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace systolic::serve {
namespace fs = std::filesystem;

Expected<ModelSettings> read_model_config(const std::string& path) {
  std::ifstream f(path);
  if (!f) return Err("cannot read %s", path.c_str());
  std::stringstream ss;
  ss << f.rdbuf();
  return model_config_from_text(ss.str(), path);
}

Expected<ModelSettings> model_config_from_text(const std::string& text, const std::string& path) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Err("%s: not a JSON object", path.c_str());
  ModelSettings s;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const auto& v = it.value();
    auto integer = [&](int64_t lo, int64_t hi, int64_t* out) -> Status {
      if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
        return Err("%s: \"%s\" must be an integer in %lld..%lld", path.c_str(), k.c_str(), static_cast<long long>(lo),
                   static_cast<long long>(hi));
      *out = v.get<int64_t>();
      return Status::Ok();
    };
    auto text = [&](std::string* out) -> Status {
      if (!v.is_string()) return Err("%s: \"%s\" must be a string", path.c_str(), k.c_str());
      *out = v.get<std::string>();
      return Status::Ok();
    };
    int64_t n = 0;
    if (k == "precision") {
      SYSTOLIC_RETURN_IF_ERROR(text(&s.precision));
      if (s.precision != "fp32" && s.precision != "bf16" && s.precision != "int8")
        return Err("%s: \"precision\" is fp32, bf16 or int8, not \"%s\"", path.c_str(), s.precision.c_str());
    } else if (k == "max_batch_size") {
      SYSTOLIC_RETURN_IF_ERROR(integer(1, 1024, &s.max_batch_size));
    } else if (k == "max_queue_delay_us") {
      SYSTOLIC_RETURN_IF_ERROR(integer(0, 10'000'000, &s.max_queue_delay_us));
    } else if (k == "max_queue_size") {
      SYSTOLIC_RETURN_IF_ERROR(integer(1, 1'000'000, &s.max_queue_size));
    } else if (k == "instances") {
      SYSTOLIC_RETURN_IF_ERROR(integer(1, 256, &n));
      s.instances = static_cast<int>(n);
    } else if (k == "threads") {
      SYSTOLIC_RETURN_IF_ERROR(integer(1, 1024, &n));
      s.threads = static_cast<int>(n);
    } else if (k == "preprocess") {
      SYSTOLIC_RETURN_IF_ERROR(text(&s.preprocess));
      if (s.preprocess != "imagenet")
        return Err("%s: \"preprocess\" is \"imagenet\", not \"%s\"", path.c_str(), s.preprocess.c_str());
    } else if (k == "labels") {
      SYSTOLIC_RETURN_IF_ERROR(text(&s.labels));
      fs::path p(s.labels);
      if (p.is_relative()) s.labels = (fs::path(path).parent_path() / p).string();
    } else {
      return Err("%s: unknown key \"%s\" (known: precision, max_batch_size, max_queue_delay_us, max_queue_size, "
                 "instances, threads, preprocess, labels)", path.c_str(), k.c_str());
    }
  }
  return s;
}

Expected<ModelSource> find_model(const std::string& repository, const std::string& name) {
  std::error_code ec;
  const fs::path dir = fs::path(repository) / name;
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == ".." ||
      !fs::is_directory(dir, ec))
    return Err("model %s is not in the repository %s", name.c_str(), repository.c_str());
  ModelSource src;
  src.name = name;
  long long best = -1;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string v = e.path().filename().string();
    if (!e.is_directory() || v.empty() || v.size() > 18 || !std::all_of(v.begin(), v.end(), ::isdigit)) continue;
    for (const char* file : {"model.plan", "model.onnx"}) {
      if (fs::is_regular_file(e.path() / file, ec) && std::stoll(v) > best) {
        best = std::stoll(v);
        src.version = v;
        src.path = (e.path() / file).string();
      }
    }
  }
  if (best < 0)
    return Err("model %s: no version directory holds model.onnx or model.plan (%s/VERSION/model.onnx)", name.c_str(),
               dir.string().c_str());
  if (fs::is_regular_file(dir / "config.json", ec)) {
    auto s = read_model_config((dir / "config.json").string());
    if (!s.ok()) return s.status();
    src.settings = *s;
  }
  return src;
}

Expected<std::vector<std::string>> list_models(const std::string& repository) {
  std::error_code ec;
  if (!fs::is_directory(repository, ec)) return Err("model repository %s is not a directory", repository.c_str());
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(repository, ec))
    if (e.is_directory()) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace systolic::serve
