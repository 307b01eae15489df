// Target helpers: dataflow names, rates, byte sizes and one-parameter what-if edits.
#include "target/target.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace systolic::target {

const char* dataflow_name(Dataflow d) {
  switch (d) {
    case Dataflow::weight_stationary: return "ws";
    case Dataflow::output_stationary: return "os";
    case Dataflow::input_stationary: return "is";
  }
  return "?";
}

Expected<Dataflow> parse_dataflow(const std::string& s) {
  if (s == "ws" || s == "weight_stationary" || s == "weight-stationary") return Dataflow::weight_stationary;
  if (s == "os" || s == "output_stationary" || s == "output-stationary") return Dataflow::output_stationary;
  if (s == "is" || s == "input_stationary" || s == "input-stationary") return Dataflow::input_stationary;
  return Err("unknown dataflow '%s' (use ws, os or is)", s.c_str());
}

const PrecisionRate* Target::rate(const std::string& precision) const {
  for (const auto& p : precisions)
    if (p.name == precision) return &p;
  return nullptr;
}

double Target::peak_macs_per_s(const std::string& precision) const {
  const PrecisionRate* r = rate(precision);
  if (!r) return 0;
  return static_cast<double>(arrays()) * rows * cols * r->macs_per_pe_cycle * clock_ghz * 1e9;
}

int64_t Target::onchip_capacity() const {
  int64_t c = 0;
  for (const auto& m : on_chip) c = std::max(c, m.capacity_bytes);
  return c;
}

double Target::onchip_bandwidth_gbs() const { return on_chip.empty() ? offchip_gbs : on_chip.front().bandwidth_gbs; }

Expected<int64_t> parse_bytes(const std::string& text) {
  std::string s;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) s += c;
  std::size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) return Err("'%s' is not a size (examples: 4096, 64KiB, 28MiB, 1.5GB)", text.c_str());
  const double v = std::atof(s.substr(0, i).c_str());
  std::string unit = s.substr(i);
  for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double mul = 0;
  if (unit.empty() || unit == "b") mul = 1;
  else if (unit == "kib" || unit == "k") mul = 1024.0;
  else if (unit == "mib" || unit == "m") mul = 1024.0 * 1024;
  else if (unit == "gib" || unit == "g") mul = 1024.0 * 1024 * 1024;
  else if (unit == "kb") mul = 1e3;
  else if (unit == "mb") mul = 1e6;
  else if (unit == "gb") mul = 1e9;
  else return Err("'%s': unknown size unit '%s' (use B, KiB, MiB, GiB, KB, MB, GB)", text.c_str(), unit.c_str());
  // Past 2^60 bytes (an exbibyte) is no machine's memory, and would not fit the int64 result.
  if (std::count(s.begin(), s.begin() + i, '.') > 1 || !(v * mul <= 0x1p60))
    return Err("'%s' is not a size (at most 2^60 bytes)", text.c_str());
  return static_cast<int64_t>(std::llround(v * mul));
}

std::string format_bytes(double b) {
  char buf[32];
  if (b >= 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  else if (b >= 1024.0 * 1024) std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1024.0 * 1024));
  else if (b >= 1024.0) std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024.0);
  else std::snprintf(buf, sizeof buf, "%.0f B", b);
  return buf;
}

Status apply_what_if(Target* t, const std::string& a) {
  const auto eq = a.find('=');
  if (eq == std::string::npos) return Err("what-if '%s': expected KEY=VALUE (e.g. array=256x256)", a.c_str());
  const std::string key = a.substr(0, eq), val = a.substr(eq + 1);
  auto number = [&](double* out) -> Status {
    char* end = nullptr;
    *out = std::strtod(val.c_str(), &end);
    if (val.empty() || *end != '\0' || !(*out > 0) || !std::isfinite(*out))
      return Err("what-if %s: '%s' is not a positive number", key.c_str(), val.c_str());
    return Status::Ok();
  };
  // Counts (cores, arrays per core): whole numbers, 1 to kMaxCount.
  constexpr double kMaxCount = 1 << 20;
  auto count = [&](int* out) -> Status {
    char* end = nullptr;
    const double d = std::strtod(val.c_str(), &end);
    if (val.empty() || *end != '\0' || !(d >= 1 && d <= kMaxCount) || d != std::floor(d))
      return Err("what-if %s: '%s' is not a whole number from 1 to %.0f", key.c_str(), val.c_str(), kMaxCount);
    *out = static_cast<int>(d);
    return Status::Ok();
  };
  double v = 0;
  if (key == "array") {
    int r = 0, c = 0, used = 0;
    if (std::sscanf(val.c_str(), "%dx%d%n", &r, &c, &used) != 2 || used != static_cast<int>(val.size()) || r <= 0 ||
        c <= 0 || r > kMaxCount || c > kMaxCount)
      return Err("what-if array: '%s' is not RxC (e.g. 256x256)", val.c_str());
    t->rows = r;
    t->cols = c;
  } else if (key == "sram" || key == "onchip") {
    auto b = parse_bytes(val);
    if (!b.ok()) return b.status();
    if (t->on_chip.empty()) t->on_chip.push_back({"sram", 0, t->offchip_gbs * 10});
    // The largest level is the one that decides re-fetches; resize it.
    auto it = std::max_element(t->on_chip.begin(), t->on_chip.end(),
                               [](const MemoryLevel& x, const MemoryLevel& y) { return x.capacity_bytes < y.capacity_bytes; });
    it->capacity_bytes = *b;
  } else if (key == "hbm_bw" || key == "bw" || key == "offchip_bw") {
    SYSTOLIC_RETURN_IF_ERROR(number(&v));
    t->offchip_gbs = v;
  } else if (key == "clock") {
    SYSTOLIC_RETURN_IF_ERROR(number(&v));
    t->clock_ghz = v;
  } else if (key == "cores") {
    SYSTOLIC_RETURN_IF_ERROR(count(&t->cores));
  } else if (key == "mxus" || key == "arrays_per_core") {
    SYSTOLIC_RETURN_IF_ERROR(count(&t->arrays_per_core));
  } else if (key == "vector") {
    SYSTOLIC_RETURN_IF_ERROR(number(&v));
    t->vector_elems_per_cycle = v;
  } else if (key == "launch_us") {
    char* end = nullptr;
    v = std::strtod(val.c_str(), &end);
    if (val.empty() || *end != '\0' || v < 0) return Err("what-if launch_us: '%s' is not a number >= 0", val.c_str());
    t->launch_overhead_us = v;
  } else if (key == "dataflow") {
    auto d = parse_dataflow(val);
    if (!d.ok()) return d.status();
    t->dataflow = *d;
  } else {
    return Err("what-if: unknown parameter '%s' (array, sram, hbm_bw, clock, cores, mxus, dataflow, vector, launch_us)",
               key.c_str());
  }
  return Status::Ok();
}

Expected<Target> load_target(const std::string& name, double host_peak_gflops) {
  if (name.size() > 5 && name.substr(name.size() - 5) == ".json") return target_from_json_file(name);
  if (name == "host") return host_target(host_cpu(), host_peak_gflops);
  return builtin_preset(name);
}

}  // namespace systolic::target
