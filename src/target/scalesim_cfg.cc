// SCALE-Sim architecture .cfg -> Target.
#include "base/text.h"
#include "target/scalesim_cfg.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <sstream>

namespace systolic::target {
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

Expected<Target> target_from_scalesim_cfg_text(const std::string& text, const std::string& where) {
  std::map<std::string, std::string> kv;  // lower-case key -> value
  std::istringstream in(text);
  std::string line, section;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const auto hash = line.find_first_of("#;");
    line = trim(hash == std::string::npos ? line : line.substr(0, hash));
    if (line.empty()) continue;
    if (line.front() == '[') {
      section = lower(trim(line.substr(1, line.find(']') - 1)));
      continue;
    }
    const auto sep = line.find_first_of(":=");
    if (sep == std::string::npos) return Err("%s:%d: expected 'Key: value'", where.c_str(), lineno);
    kv[lower(trim(line.substr(0, sep)))] = trim(line.substr(sep + 1));
  }
  auto integer = [&](const char* key, int64_t def, bool required, int64_t* out) -> Status {
    auto it = kv.find(lower(key));
    if (it == kv.end()) {
      if (required) return Err("%s: missing %s in [architecture_presets]", where.c_str(), key);
      *out = def;
      return Status::Ok();
    }
    char* end = nullptr;
    const double v = std::strtod(it->second.c_str(), &end);
    if (it->second.empty() || *end != '\0' || !(v >= 1) || v >= 0x1p31)
      return Err("%s: %s = '%s' is not a number from 1 to 2^31 - 1", where.c_str(), key, it->second.c_str());
    *out = static_cast<int64_t>(v);
    return Status::Ok();
  };
  int64_t rows = 0, cols = 0, ifm = 0, fil = 0, ofm = 0, bw = 0;
  SYSTOLIC_RETURN_IF_ERROR(integer("ArrayHeight", 0, true, &rows));
  SYSTOLIC_RETURN_IF_ERROR(integer("ArrayWidth", 0, true, &cols));
  SYSTOLIC_RETURN_IF_ERROR(integer("IfmapSramSzkB", 256, false, &ifm));
  SYSTOLIC_RETURN_IF_ERROR(integer("FilterSramSzkB", 256, false, &fil));
  SYSTOLIC_RETURN_IF_ERROR(integer("OfmapSramSzkB", 128, false, &ofm));
  SYSTOLIC_RETURN_IF_ERROR(integer("Bandwidth", 10, false, &bw));
  Target t;
  const auto run = kv.find("run_name");
  t.name = run != kv.end() ? run->second : "scalesim";
  t.description = "SCALE-Sim configuration " + where;
  t.source = where;
  t.rows = static_cast<int>(rows);
  t.cols = static_cast<int>(cols);
  t.clock_ghz = 1.0;
  t.precisions = {{"int8", 1.0, 1}};  // SCALE-Sim counts words; one byte each here
  t.default_precision = "int8";
  const auto df = kv.find("dataflow");
  if (df != kv.end()) {
    auto d = parse_dataflow(lower(df->second));
    if (!d.ok()) return Err("%s: Dataflow: %s", where.c_str(), d.status().message().c_str());
    t.dataflow = *d;
  }
  // SCALE-Sim's kB sizes are in units of 1024 words; the SRAM feeds the array without stalls.
  t.on_chip = {{"sram", (ifm + fil + ofm) * 1024, 3.0 * std::max(rows, cols)}};
  t.offchip_gbs = static_cast<double>(bw);  // words/cycle at 1 GHz and one byte per word
  t.offchip_bytes = int64_t{1} << 34;
  t.vector_elems_per_cycle = static_cast<double>(cols);
  t.launch_overhead_us = 0;
  return t;
}

Expected<Target> target_from_scalesim_cfg(const std::string& path) {
  std::ifstream f(path);
  if (!f) return Err("cannot read SCALE-Sim config %s", path.c_str());
  std::stringstream ss;
  ss << f.rdbuf();
  return target_from_scalesim_cfg_text(ss.str(), path);
}

}  // namespace systolic::target
