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

namespace {

Status write_text(const std::string& text, const std::string& path) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return Err("cannot write the profile %s", path.c_str());
  f << text << "\n";
  if (!f) return Err("writing the profile %s failed", path.c_str());
  return Status::Ok();
}

}  // namespace

Status write_chrome_trace(const runtime::Session& s, const std::string& path) {
  return write_text(chrome_trace_json(s), path);
}

std::string pipeline_trace_json(const runtime::PipelineReport& rep, const std::vector<const runtime::Session*>& sessions) {
  nlohmann::json ev = nlohmann::json::array();
  ev.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"tid", 0}, {"args", {{"name", "systolic pipeline"}}}});
  // Track ids: 100 + k loaders, 200 assembly, 300 + k inference instances, 400 results.
  const int base[] = {100, 200, 300, 400};
  for (std::size_t st = 0; st < rep.stages.size() && st < 4; ++st)
    for (int k = 0; k < rep.stages[st].threads; ++k) {
      const std::string name = rep.stages[st].name + (rep.stages[st].threads > 1 ? " " + std::to_string(k) : "");
      ev.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 1}, {"tid", base[st] + k}, {"args", {{"name", name}}}});
    }
  for (const runtime::PipelineEvent& e : rep.events) {
    const std::string stage = rep.stages[static_cast<std::size_t>(e.stage)].name;
    const bool per_item = e.stage <= 1;
    ev.push_back({{"name", stage + (per_item ? " image " : " batch ") + std::to_string(e.item)},
                  {"cat", stage}, {"ph", "X"}, {"ts", e.start_ns / 1e3}, {"dur", e.dur_ns / 1e3},
                  {"pid", 1}, {"tid", base[e.stage] + e.thread},
                  {"args", {{per_item ? "image" : "batch", e.item}}}});
  }
  for (std::size_t k = 0; k < sessions.size(); ++k) {
    const runtime::Session& s = *sessions[k];
    const auto steps = s.profile();
    const double shift_us =
        std::chrono::duration<double, std::micro>(s.epoch() - rep.start).count();  // session clock -> pipeline clock
    for (const runtime::TraceEvent& e : s.trace()) {
      if (e.step < 0) continue;  // the batch span above already covers the run
      const auto& st = steps[static_cast<std::size_t>(e.step)];
      ev.push_back({{"name", st.name}, {"cat", st.op}, {"ph", "X"}, {"ts", shift_us + e.start_ns / 1e3},
                    {"dur", e.dur_ns / 1e3}, {"pid", 1}, {"tid", 300 + static_cast<int>(k)},
                    {"args", {{"kernel", st.kernel}, {"run", e.run}}}});
    }
  }
  nlohmann::json j = {{"traceEvents", std::move(ev)}, {"displayTimeUnit", "ms"}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Status write_pipeline_trace(const runtime::PipelineReport& rep, const std::vector<const runtime::Session*>& sessions,
                            const std::string& path) {
  return write_text(pipeline_trace_json(rep, sessions), path);
}

}  // namespace systolic::tools
