// Chrome trace (chrome://tracing, Perfetto) of a session's recorded runs.
#pragma once
#include <string>

#include "base/status.h"
#include "runtime/session.h"

namespace systolic::tools {

// Writes {"traceEvents": [...]}: one complete ("ph":"X") event per step of every traced run
// (name = node, cat = op, args = kernel and GFLOP/s) and one per run (cat "run"); ts and dur
// in microseconds.
std::string chrome_trace_json(const runtime::Session& s);
Status write_chrome_trace(const runtime::Session& s, const std::string& path);

}  // namespace systolic::tools
