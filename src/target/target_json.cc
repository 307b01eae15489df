// User presets as JSON (nlohmann json): optional "base" preset, then fields that override it.
// Unknown keys and wrong types are errors that name the file and the field.
#include <climits>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "target/target.h"

namespace systolic::target {
namespace {
using nlohmann::json;

Status field_error(const std::string& where, const std::string& key, const char* want) {
  return Err("%s: field \"%s\" must be %s", where.c_str(), key.c_str(), want);
}

// A finite number > 0 (a JSON literal past double's range parses as infinity).
bool positive_number(const json& v) { return v.is_number() && v.get<double>() > 0 && std::isfinite(v.get<double>()); }

// An integer in 1..INT_MAX, read without truncation.
bool positive_int(const json& v, int* out) {
  if (!v.is_number_integer()) return false;
  if (v.is_number_unsigned() ? v.get<uint64_t>() > INT_MAX : (v.get<int64_t>() <= 0 || v.get<int64_t>() > INT_MAX))
    return false;
  *out = static_cast<int>(v.get<int64_t>());
  return true;
}

Status get_positive(const json& j, const std::string& key, const std::string& where, double* out) {
  if (!j.contains(key)) return Status::Ok();
  if (!positive_number(j[key])) return field_error(where, key, "a positive number");
  *out = j[key].get<double>();
  return Status::Ok();
}

Status get_int(const json& j, const std::string& key, const std::string& where, int* out) {
  if (!j.contains(key)) return Status::Ok();
  if (!positive_int(j[key], out)) return field_error(where, key, "a positive integer (at most 2^31 - 1)");
  return Status::Ok();
}

Status get_bytes(const json& v, const std::string& key, const std::string& where, int64_t* out) {
  if (v.is_number_integer() && v.get<int64_t>() > 0) {
    *out = v.get<int64_t>();
    return Status::Ok();
  }
  if (v.is_string()) {
    auto b = parse_bytes(v.get<std::string>());
    if (!b.ok()) return Err("%s: field \"%s\": %s", where.c_str(), key.c_str(), b.status().message().c_str());
    if (*b <= 0) return field_error(where, key, "a positive size");
    *out = *b;
    return Status::Ok();
  }
  return field_error(where, key, "a byte count or a size string like \"28MiB\"");
}

// "gpu": {"cta_tiles": [[128, 128], ...], "stages": 3, ...}: GpuModel's fields, each optional.
Status gpu_from_json(const json& g, const std::string& where, GpuModel* m) {
  if (!g.is_object()) return field_error(where, "gpu", "an object (cta_tiles, stages, smem_per_sm, ...)");
  static const std::set<std::string> known = {"cta_tiles", "k_stage_bytes", "stages", "smem_per_sm", "regs_per_sm",
                                              "max_ctas_per_sm", "warp_tile", "smem_bytes_per_cycle",
                                              "tile_prologue_cycles", "store_bytes_per_cycle", "split_k_max"};
  for (auto it = g.begin(); it != g.end(); ++it)
    if (!known.count(it.key())) return Err("%s: unknown field \"gpu.%s\"", where.c_str(), it.key().c_str());
  m->enabled = true;
  auto pair = [&](const json& v, std::array<int, 2>* out) {
    return v.is_array() && v.size() == 2 && positive_int(v[0], &(*out)[0]) && positive_int(v[1], &(*out)[1]);
  };
  if (g.contains("cta_tiles")) {
    const json& c = g["cta_tiles"];
    if (!c.is_array() || c.empty()) return field_error(where, "gpu.cta_tiles", "a list of [M, N] tiles");
    m->cta_tiles.clear();
    for (const auto& v : c) {
      std::array<int, 2> tile{};
      if (!pair(v, &tile)) return field_error(where, "gpu.cta_tiles", "a list of [M, N] tiles");
      m->cta_tiles.push_back(tile);
    }
  }
  if (g.contains("warp_tile")) {
    std::array<int, 2> w{};
    if (!pair(g["warp_tile"], &w)) return field_error(where, "gpu.warp_tile", "[M, N]");
    m->warp_m = w[0];
    m->warp_n = w[1];
  }
  const std::string w = where + " gpu";
  SYSTOLIC_RETURN_IF_ERROR(get_int(g, "k_stage_bytes", w, &m->k_stage_bytes));
  SYSTOLIC_RETURN_IF_ERROR(get_int(g, "stages", w, &m->stages));
  SYSTOLIC_RETURN_IF_ERROR(get_int(g, "max_ctas_per_sm", w, &m->max_ctas_per_sm));
  SYSTOLIC_RETURN_IF_ERROR(get_int(g, "split_k_max", w, &m->split_k_max));
  SYSTOLIC_RETURN_IF_ERROR(get_positive(g, "smem_bytes_per_cycle", w, &m->smem_bytes_per_cycle));
  SYSTOLIC_RETURN_IF_ERROR(get_positive(g, "store_bytes_per_cycle", w, &m->store_bytes_per_cycle));
  if (g.contains("tile_prologue_cycles")) {
    if (!g["tile_prologue_cycles"].is_number() || !(g["tile_prologue_cycles"].get<double>() >= 0) ||
        !std::isfinite(g["tile_prologue_cycles"].get<double>()))
      return field_error(where, "gpu.tile_prologue_cycles", "a number >= 0");
    m->tile_prologue_cycles = g["tile_prologue_cycles"].get<double>();
  }
  if (g.contains("smem_per_sm")) SYSTOLIC_RETURN_IF_ERROR(get_bytes(g["smem_per_sm"], "gpu.smem_per_sm", where, &m->smem_per_sm));
  if (g.contains("regs_per_sm")) SYSTOLIC_RETURN_IF_ERROR(get_bytes(g["regs_per_sm"], "gpu.regs_per_sm", where, &m->regs_per_sm));
  if (m->cta_tiles.empty()) return field_error(where, "gpu.cta_tiles", "given (no base GPU preset to take them from)");
  if (m->smem_per_sm <= 0) return field_error(where, "gpu.smem_per_sm", "given (no base GPU preset to take it from)");
  return Status::Ok();
}

}  // namespace

Expected<Target> target_from_json_text(const std::string& text, const std::string& where) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return Err("%s: not valid JSON", where.c_str());
  if (!j.is_object()) return Err("%s: expected a JSON object describing one target", where.c_str());
  static const std::set<std::string> known = {
      "name", "base", "description", "source", "cores", "arrays_per_core", "rows", "cols", "array",
      "dataflow", "clock_ghz", "precisions", "default_precision", "on_chip", "offchip_gbs",
      "offchip_capacity", "vector_elems_per_cycle", "launch_overhead_us", "gpu"};
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!known.count(it.key())) return Err("%s: unknown field \"%s\"", where.c_str(), it.key().c_str());
  if (!j.contains("name") || !j["name"].is_string() || j["name"].get<std::string>().empty())
    return field_error(where, "name", "a non-empty string");
  Target t;
  if (j.contains("base")) {
    if (!j["base"].is_string()) return field_error(where, "base", "a preset name");
    auto b = builtin_preset(j["base"].get<std::string>());
    if (!b.ok()) return Err("%s: field \"base\": %s", where.c_str(), b.status().message().c_str());
    t = *b;
  }
  t.name = j["name"].get<std::string>();
  for (const char* k : {"description", "source", "default_precision"}) {
    if (!j.contains(k)) continue;
    if (!j[k].is_string()) return field_error(where, k, "a string");
    (std::string(k) == "description" ? t.description : std::string(k) == "source" ? t.source : t.default_precision) =
        j[k].get<std::string>();
  }
  SYSTOLIC_RETURN_IF_ERROR(get_int(j, "cores", where, &t.cores));
  SYSTOLIC_RETURN_IF_ERROR(get_int(j, "arrays_per_core", where, &t.arrays_per_core));
  SYSTOLIC_RETURN_IF_ERROR(get_int(j, "rows", where, &t.rows));
  SYSTOLIC_RETURN_IF_ERROR(get_int(j, "cols", where, &t.cols));
  if (j.contains("array")) {
    if (!j["array"].is_string()) return field_error(where, "array", "a string like \"128x128\"");
    SYSTOLIC_RETURN_IF_ERROR(apply_what_if(&t, "array=" + j["array"].get<std::string>()));
  }
  if (j.contains("dataflow")) {
    if (!j["dataflow"].is_string()) return field_error(where, "dataflow", "\"ws\", \"os\" or \"is\"");
    auto d = parse_dataflow(j["dataflow"].get<std::string>());
    if (!d.ok()) return Err("%s: field \"dataflow\": %s", where.c_str(), d.status().message().c_str());
    t.dataflow = *d;
  }
  SYSTOLIC_RETURN_IF_ERROR(get_positive(j, "clock_ghz", where, &t.clock_ghz));
  SYSTOLIC_RETURN_IF_ERROR(get_positive(j, "offchip_gbs", where, &t.offchip_gbs));
  SYSTOLIC_RETURN_IF_ERROR(get_positive(j, "vector_elems_per_cycle", where, &t.vector_elems_per_cycle));
  if (j.contains("launch_overhead_us")) {
    if (!j["launch_overhead_us"].is_number() || !(j["launch_overhead_us"].get<double>() >= 0) ||
        !std::isfinite(j["launch_overhead_us"].get<double>()))
      return field_error(where, "launch_overhead_us", "a number >= 0");
    t.launch_overhead_us = j["launch_overhead_us"].get<double>();
  }
  if (j.contains("offchip_capacity"))
    SYSTOLIC_RETURN_IF_ERROR(get_bytes(j["offchip_capacity"], "offchip_capacity", where, &t.offchip_bytes));
  if (j.contains("precisions")) {
    const json& p = j["precisions"];
    if (!p.is_object() || p.empty())
      return field_error(where, "precisions", "an object like {\"bf16\": {\"macs_per_pe_cycle\": 1, \"bytes\": 2}}");
    t.precisions.clear();
    for (auto it = p.begin(); it != p.end(); ++it) {
      const std::string key = "precisions." + it.key();
      PrecisionRate r{it.key(), 1.0, 2};
      if (!it->is_object()) return field_error(where, key, "an object");
      SYSTOLIC_RETURN_IF_ERROR(get_positive(*it, "macs_per_pe_cycle", where + " " + key, &r.macs_per_pe_cycle));
      SYSTOLIC_RETURN_IF_ERROR(get_int(*it, "bytes", where + " " + key, &r.bytes));
      if (it->contains("mma")) {  // a GPU's MMA shape, [m, n, k]
        const json& m = (*it)["mma"];
        if (!m.is_array() || m.size() != 3 || !positive_int(m[0], &r.mma_m) || !positive_int(m[1], &r.mma_n) ||
            !positive_int(m[2], &r.mma_k))
          return field_error(where, key + ".mma", "[m, n, k], three positive integers");
      }
      t.precisions.push_back(r);
    }
  }
  if (j.contains("on_chip")) {
    const json& m = j["on_chip"];
    if (!m.is_array()) return field_error(where, "on_chip", "a list of {name, capacity, bandwidth_gbs}");
    t.on_chip.clear();
    for (std::size_t i = 0; i < m.size(); ++i) {
      const std::string key = "on_chip[" + std::to_string(i) + "]";
      if (!m[i].is_object() || !m[i].contains("capacity"))
        return field_error(where, key, "an object with a \"capacity\"");
      if (m[i].contains("name") && !m[i]["name"].is_string()) return field_error(where, key + ".name", "a string");
      MemoryLevel l{m[i].value("name", "sram"), 0, 0};
      SYSTOLIC_RETURN_IF_ERROR(get_bytes(m[i]["capacity"], key + ".capacity", where, &l.capacity_bytes));
      l.bandwidth_gbs = t.offchip_gbs * 10;
      SYSTOLIC_RETURN_IF_ERROR(get_positive(m[i], "bandwidth_gbs", where + " " + key, &l.bandwidth_gbs));
      t.on_chip.push_back(l);
    }
  }
  if (j.contains("gpu")) SYSTOLIC_RETURN_IF_ERROR(gpu_from_json(j["gpu"], where, &t.gpu));
  if (t.precisions.empty()) return Err("%s: no \"precisions\" given and no \"base\" preset to take them from", where.c_str());
  if (!(t.offchip_gbs > 0)) return field_error(where, "offchip_gbs", "given (no base preset to take it from)");
  if (!t.rate(t.default_precision))
    return Err("%s: default_precision \"%s\" is not among the target's precisions", where.c_str(), t.default_precision.c_str());
  if (!(t.offchip_gbs > 0)) return field_error(where, "offchip_gbs", "given (a positive number, GB/s)");
  return t;
}

Expected<Target> target_from_json_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) return Err("cannot read target file %s", path.c_str());
  std::stringstream ss;
  ss << f.rdbuf();
  return target_from_json_text(ss.str(), path);
}

std::string target_to_json(const Target& t) {
  json j = {{"name", t.name},
            {"description", t.description},
            {"source", t.source},
            {"cores", t.cores},
            {"arrays_per_core", t.arrays_per_core},
            {"rows", t.rows},
            {"cols", t.cols},
            {"dataflow", dataflow_name(t.dataflow)},
            {"clock_ghz", t.clock_ghz},
            {"default_precision", t.default_precision},
            {"offchip_gbs", t.offchip_gbs},
            {"vector_elems_per_cycle", t.vector_elems_per_cycle},
            {"launch_overhead_us", t.launch_overhead_us}};
  if (t.offchip_bytes > 0) j["offchip_capacity"] = t.offchip_bytes;  // 0: not known
  j["precisions"] = json::object();
  for (const auto& p : t.precisions) {
    j["precisions"][p.name] = {{"macs_per_pe_cycle", p.macs_per_pe_cycle}, {"bytes", p.bytes}};
    if (p.mma_k > 0) j["precisions"][p.name]["mma"] = {p.mma_m, p.mma_n, p.mma_k};
  }
  if (t.gpu.enabled) {
    const GpuModel& g = t.gpu;
    j["gpu"] = {{"cta_tiles", g.cta_tiles},
                {"k_stage_bytes", g.k_stage_bytes},
                {"stages", g.stages},
                {"smem_per_sm", g.smem_per_sm},
                {"regs_per_sm", g.regs_per_sm},
                {"max_ctas_per_sm", g.max_ctas_per_sm},
                {"warp_tile", {g.warp_m, g.warp_n}},
                {"smem_bytes_per_cycle", g.smem_bytes_per_cycle},
                {"tile_prologue_cycles", g.tile_prologue_cycles},
                {"store_bytes_per_cycle", g.store_bytes_per_cycle},
                {"split_k_max", g.split_k_max}};
  }
  j["on_chip"] = json::array();
  for (const auto& m : t.on_chip)
    j["on_chip"].push_back({{"name", m.name}, {"capacity", m.capacity_bytes}, {"bandwidth_gbs", m.bandwidth_gbs}});
  return j.dump(2);
}

}  // namespace systolic::target
