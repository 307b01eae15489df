// User presets as JSON (nlohmann json): optional "base" preset, then fields that override it.
// Unknown keys and wrong types are errors that name the file and the field.
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

Status get_positive(const json& j, const std::string& key, const std::string& where, double* out) {
  if (!j.contains(key)) return Status::Ok();
  if (!j[key].is_number() || !(j[key].get<double>() > 0)) return field_error(where, key, "a positive number");
  *out = j[key].get<double>();
  return Status::Ok();
}

Status get_int(const json& j, const std::string& key, const std::string& where, int* out) {
  if (!j.contains(key)) return Status::Ok();
  if (!j[key].is_number_integer() || j[key].get<int64_t>() <= 0) return field_error(where, key, "a positive integer");
  *out = j[key].get<int>();
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
    *out = *b;
    return Status::Ok();
  }
  return field_error(where, key, "a byte count or a size string like \"28MiB\"");
}

}  // namespace

Expected<Target> target_from_json_text(const std::string& text, const std::string& where) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return Err("%s: not valid JSON", where.c_str());
  if (!j.is_object()) return Err("%s: expected a JSON object describing one target", where.c_str());
  static const std::set<std::string> known = {
      "name", "base", "description", "source", "cores", "arrays_per_core", "rows", "cols", "array",
      "dataflow", "clock_ghz", "precisions", "default_precision", "on_chip", "offchip_gbs",
      "offchip_capacity", "vector_elems_per_cycle", "launch_overhead_us"};
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
    if (!j["launch_overhead_us"].is_number() || j["launch_overhead_us"].get<double>() < 0)
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
      MemoryLevel l{m[i].value("name", "sram"), 0, 0};
      SYSTOLIC_RETURN_IF_ERROR(get_bytes(m[i]["capacity"], key + ".capacity", where, &l.capacity_bytes));
      l.bandwidth_gbs = t.offchip_gbs * 10;
      SYSTOLIC_RETURN_IF_ERROR(get_positive(m[i], "bandwidth_gbs", where + " " + key, &l.bandwidth_gbs));
      t.on_chip.push_back(l);
    }
  }
  if (t.precisions.empty()) return Err("%s: no \"precisions\" given and no \"base\" preset to take them from", where.c_str());
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
            {"offchip_capacity", t.offchip_bytes},
            {"vector_elems_per_cycle", t.vector_elems_per_cycle},
            {"launch_overhead_us", t.launch_overhead_us}};
  j["precisions"] = json::object();
  for (const auto& p : t.precisions) j["precisions"][p.name] = {{"macs_per_pe_cycle", p.macs_per_pe_cycle}, {"bytes", p.bytes}};
  j["on_chip"] = json::array();
  for (const auto& m : t.on_chip)
    j["on_chip"].push_back({{"name", m.name}, {"capacity", m.capacity_bytes}, {"bandwidth_gbs", m.bandwidth_gbs}});
  return j.dump(2);
}

}  // namespace systolic::target
