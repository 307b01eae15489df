// Session trace events to Chrome trace-event JSON.
#include "tools/trace_json.h"

#include <fstream>
#include <nlohmann/json.hpp>

namespace systolic::tools {

std::string chrome_trace_json(const runtime::Session& s) {
  const auto steps = s.profile();
  nlohmann::json ev = nlohmann::json::array();
  ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 1}, {"args", {{"name", "systolic"}}}});
  ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 1}, {"args", {{"name", "session"}}}});
  for (const runtime::TraceEvent& e : s.trace()) {
    const double ts = e.start_ns / 1e3, dur = e.dur_ns / 1e3;
    if (e.step < 0) {
      ev.push_back({{"name", "run " + std::to_string(e.run)}, {"cat", "run"}, {"ph", "X"}, {"ts", ts}, {"dur", dur},
                    {"pid", 1}, {"tid", 1}, {"args", {{"run", e.run}}}});
      continue;
    }
    const auto& st = steps[static_cast<std::size_t>(e.step)];
    const double gflops = e.dur_ns > 0 ? st.flops / e.dur_ns : 0.0;  // FLOP per ns = GFLOP/s
    ev.push_back({{"name", st.name}, {"cat", st.op}, {"ph", "X"}, {"ts", ts}, {"dur", dur}, {"pid", 1}, {"tid", 1},
                  {"args", {{"kernel", st.kernel}, {"gflops", gflops}, {"run", e.run}}}});
  }
  nlohmann::json j = {{"traceEvents", std::move(ev)}, {"displayTimeUnit", "ms"}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Status write_chrome_trace(const runtime::Session& s, const std::string& path) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return Err("cannot write the profile %s", path.c_str());
  f << chrome_trace_json(s) << "\n";
  if (!f) return Err("writing the profile %s failed", path.c_str());
  return Status::Ok();
}

}  // namespace systolic::tools
