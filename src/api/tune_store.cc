// The tune store: key derivation, JSON entries, atomic writes.
#include "api/tune_store.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/cpu.h"
#include "api/compile_cache.h"
#include "plan/program.h"

namespace systolic::api {
namespace {

constexpr int kStoreVersion = 1;

Expected<std::string> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return Err("cannot open %s: %s", path.c_str(), std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  if (f.bad()) return Err("cannot read %s", path.c_str());
  return ss.str();
}

// The host as the recommendation depends on it; the ISA too, since SYSTOLIC_ISA can cap it.
nlohmann::json host_json() {
  const CpuFeatures& c = host_cpu();
  return {{"cpu", c.name}, {"cores", c.cores}, {"isa", plan::isa_name(c)}};
}

struct Key {
  std::string model_hash, file;
};

Expected<Key> key_of(const std::string& model_path, const std::string& precision) {
  auto bytes = read_file(model_path);
  if (!bytes.ok()) return bytes.status();
  Key k;
  k.model_hash = content_hash(bytes->data(), bytes->size());
  const std::string dir = default_cache_dir();
  if (dir.empty()) return Err("no cache directory (set SYSTOLIC_CACHE_DIR, XDG_CACHE_HOME or HOME)");
  const std::string id = k.model_hash + "|" + precision + "|" + host_json().dump();
  // The content, not the file name: a copied or renamed model keeps its recommendation.
  k.file = dir + "/tune/" + content_hash(id.data(), id.size()) + ".json";
  return k;
}

}  // namespace

Expected<std::string> tuned_path(const std::string& model_path, const std::string& precision) {
  auto k = key_of(model_path, precision);
  if (!k.ok()) return k.status();
  return k->file;
}

Expected<std::optional<TunedConfig>> load_tuned(const std::string& model_path, const std::string& precision) {
  auto k = key_of(model_path, precision);
  if (!k.ok()) return k.status();
  std::error_code ec;
  if (!std::filesystem::exists(k->file, ec)) return std::optional<TunedConfig>();
  auto text = read_file(k->file);
  if (!text.ok()) return text.status();
  const auto j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  auto bad = [&](const char* why) { return Err("tuned configuration %s is %s; rerun systolic tune", k->file.c_str(), why); };
  if (!j.is_object()) return bad("not valid JSON");
  TunedConfig c;
  try {  // value() and get() throw on a field of the wrong type: the file is another program's
    // The file name is a truncated hash: check what it was saved for.
    if (j.value("version", 0) != kStoreVersion) return bad("from another version");
    if (j.value("model_hash", "") != k->model_hash || j.value("precision", "") != precision ||
        j.value("host", nlohmann::json()) != host_json())
      return bad("for another model, precision or host");
    c.batch = j.at("batch").get<int64_t>();
    c.threads = static_cast<int>(std::clamp<int64_t>(j.at("threads").get<int64_t>(), 0, 1 << 16));
    c.instances = static_cast<int>(std::clamp<int64_t>(j.at("instances").get<int64_t>(), 0, 1 << 16));
    c.throughput_per_s = j.at("throughput_per_s").get<double>();
    c.p99_ms = j.at("p99_ms").get<double>();
    c.peak_bytes = j.at("peak_bytes").get<int64_t>();
  } catch (const nlohmann::json::exception&) {
    return bad("missing a field or holding one of the wrong type");
  }
  if (c.batch < 1 || c.threads < 1 || c.instances < 1) return bad("out of range");
  c.path = k->file;
  return std::optional<TunedConfig>(c);
}

Status save_tuned(const std::string& model_path, const std::string& precision, const TunedConfig& cfg) {
  if (cfg.batch < 1 || cfg.threads < 1 || cfg.instances < 1)
    return Err("cannot save a tuned configuration with batch %lld, %d threads, %d instances",
               static_cast<long long>(cfg.batch), cfg.threads, cfg.instances);
  auto k = key_of(model_path, precision);
  if (!k.ok()) return k.status();
  std::error_code ec;
  const nlohmann::json j = {{"version", kStoreVersion},
                            {"model", std::filesystem::absolute(model_path, ec).string()},
                            {"model_hash", k->model_hash},
                            {"precision", precision},
                            {"host", host_json()},
                            {"batch", cfg.batch},
                            {"threads", cfg.threads},
                            {"instances", cfg.instances},
                            {"throughput_per_s", cfg.throughput_per_s},
                            {"p99_ms", cfg.p99_ms},
                            {"peak_bytes", cfg.peak_bytes}};
  const std::filesystem::path file(k->file);
  std::filesystem::create_directories(file.parent_path(), ec);
  if (ec) return Err("cannot create %s: %s", file.parent_path().c_str(), ec.message().c_str());
  // Temporary file + rename: a concurrent reader sees the old entry or the new one.
  const std::string tmp = k->file + ".tmp." + std::to_string(getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << j.dump(2) << "\n";
    if (!f.flush()) {
      std::filesystem::remove(tmp, ec);
      return Err("cannot write %s", tmp.c_str());
    }
  }
  std::filesystem::rename(tmp, file, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    return Err("cannot write %s: %s", k->file.c_str(), ec.message().c_str());
  }
  return Status::Ok();
}

}  // namespace systolic::api
