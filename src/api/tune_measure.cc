// Footprint estimates, the memory check before allocating, and the measured run of one
// configuration with the process's peak RSS around it.
#include "api/percentile.h"
#include "api/tune_measure.h"

#include <malloc.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "api/multi_instance.h"
#include "interp/nn_geometry.h"
#include "kernels/bconv/bconv.h"
#include "kernels/conv/conv.h"
#include "kernels/qconv/qconv.h"

namespace systolic::api {
namespace {

constexpr double kMiB = 1048576.0;

// A "Key:   N kB" line of /proc/self/status or /proc/meminfo, in bytes; -1 if absent.
int64_t proc_kb(const char* file, const char* key) {
  FILE* f = std::fopen(file, "r");
  if (!f) return -1;
  char line[256];
  int64_t v = -1;
  const std::size_t n = std::strlen(key);
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, key, n) == 0 && line[n] == ':') {
      v = std::strtoll(line + n + 1, nullptr, 10) * 1024;
      break;
    }
  std::fclose(f);
  return v;
}

// Resets the kernel's high-water mark of this process's RSS to its current RSS. Freed heap
// goes back to the system first, so one configuration's peak does not hide the next one's.
bool reset_peak_rss() {
  malloc_trim(0);
  FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (!f) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

}  // namespace

std::string split_name(const Split& s) {
  return std::to_string(s.instances) + (s.instances == 1 ? " instance x " : " instances x ") +
         std::to_string(s.threads) + (s.threads == 1 ? " thread" : " threads");
}

bool can_measure_peak_rss() { return reset_peak_rss() && proc_kb("/proc/self/status", "VmHWM") > 0; }

Footprint estimate_footprint(const plan::Program& p) {
  const ir::Graph& g = p.graph;
  Footprint f;
  for (const ir::Tensor& t : g.tensors)
    if (t.is_const()) f.weights += static_cast<int64_t>(t.data->size());
  // As Session::create sizes them: the arena in 64-byte units, one workspace for all convs.
  int64_t workspace = 0;
  for (const ir::Node& n : g.nodes) {
    auto k = n.attrs.find("kernel");
    kernels::ConvParams cp;
    if (n.op != ir::Op::Conv || k == n.attrs.end() || !interp::decode_conv_params(n.ints("conv_params"), &cp)) continue;
    const std::string& name = k->second.str_v;
    const kernels::ConvKernel* ck = kernels::conv_find(name);
    if (!ck) ck = kernels::bconv_find(name);
    if (ck) workspace = std::max(workspace, static_cast<int64_t>(ck->workspace_bytes(cp)));
    if (const kernels::QConvKernel* qk = kernels::qconv_find(name)) {
      kernels::QConvParams qp;
      qp.conv = cp;
      qp.out_f32 = static_cast<int>(n.i("q_out_f32", 0));
      workspace = std::max(workspace, static_cast<int64_t>(qk->workspace_bytes(qp)));
    }
  }
  auto round64 = [](int64_t b) { return (b + 63) / 64 * 64; };
  int64_t io = 0;
  for (int id : g.inputs) io += static_cast<int64_t>(g.t(id).bytes());
  for (int id : g.outputs) io += static_cast<int64_t>(g.t(id).bytes());
  f.per_instance = round64(std::max<int64_t>(64, g.arena_bytes)) + round64(workspace) + io;
  return f;
}

Expected<TuneRow> measure_config(std::shared_ptr<const plan::Program> program, const Split& split,
                                 const MeasureOptions& opts) {
  TuneRow row;
  row.batch = program->batch;
  row.split = split;
  const Footprint fp = estimate_footprint(*program);
  row.estimate_bytes = fp.total(split.instances);
  // The plan (and so the weights) is loaded already: what the sessions add comes on top of
  // the current RSS.
  const int64_t added = fp.per_instance * split.instances;
  malloc_trim(0);  // what earlier configurations freed is not part of this one
  const int64_t rss = std::max<int64_t>(0, proc_kb("/proc/self/status", "VmRSS"));
  if (opts.memory_budget > 0 && rss + added > opts.memory_budget) {
    row.note = "does not fit: " + size_str(rss) + " resident + " + size_str(added) + " for " +
               std::to_string(split.instances) + (split.instances == 1 ? " instance" : " instances") + " > budget " +
               size_str(opts.memory_budget);
    return row;
  }
  const int64_t available = proc_kb("/proc/meminfo", "MemAvailable");
  if (available > 0 && added > available) {
    row.note = "does not fit: needs " + size_str(added) + ", " + size_str(available) + " available";
    return row;
  }
  const bool measured = reset_peak_rss();
  auto inst = open_instances(program, split.instances, split.threads);
  if (!inst.ok()) {
    row.note = "does not fit: " + inst.status().message();
    return row;
  }
  // One untimed run each first: page faults on the arena, caches, thread start-up.
  auto warm = run_instances(*inst, 1, 0);
  if (!warm.ok()) return warm.status();
  auto r = run_instances(*inst, opts.min_runs, opts.seconds);
  if (!r.ok()) return r.status();
  // Read while the sessions are alive; without a reset, the current RSS (everything is
  // allocated up front) stands in for the peak.
  row.peak_bytes = std::max<int64_t>(0, proc_kb("/proc/self/status", measured ? "VmHWM" : "VmRSS"));
  row.fits = true;
  row.runs = r->runs;
  row.throughput_per_s = r->wall_s > 0 ? static_cast<double>(r->runs * row.batch) / r->wall_s : 0;
  row.p50_ms = percentile(r->latency_ms, 0.5);
  row.p99_ms = percentile(r->latency_ms, 0.99);
  return row;
}

std::string size_str(int64_t bytes) {
  char buf[32];
  const double b = static_cast<double>(bytes);
  if (b < 1024) std::snprintf(buf, sizeof buf, "%lld bytes", static_cast<long long>(bytes));
  else if (b < kMiB) std::snprintf(buf, sizeof buf, "%.1f KiB", b / 1024);
  else if (b < 100 * kMiB) std::snprintf(buf, sizeof buf, "%.1f MiB", b / kMiB);
  else std::snprintf(buf, sizeof buf, "%.0f MiB", b / kMiB);
  return buf;
}

Expected<int64_t> parse_bytes(const std::string& s) {
  auto bad = [&] { return Err("invalid size '%s': expected bytes, or a number with K, M, G or T (e.g. 512M, 1.5G)", s.c_str()); };
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !std::isfinite(v) || v <= 0) return bad();
  std::string unit(end);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  // "M", "MB" and "MiB" all mean 2^20 bytes.
  if (unit.size() == 3 && unit.compare(1, 2, "IB") == 0) unit.resize(1);
  else if (unit.size() == 2 && unit[1] == 'B') unit.resize(1);
  else if (unit == "B") unit.clear();
  double scale = 1;
  if (unit == "K") scale = 1024.0;
  else if (unit == "M") scale = kMiB;
  else if (unit == "G") scale = kMiB * 1024;
  else if (unit == "T") scale = kMiB * kMiB;
  else if (!unit.empty()) return bad();
  const double bytes = v * scale;
  if (bytes < 1 || bytes > 9.0e18) return bad();
  return static_cast<int64_t>(bytes);
}

}  // namespace systolic::api
