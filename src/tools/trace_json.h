// Chrome trace (chrome://tracing, Perfetto) of a session's recorded runs.
#pragma once
#include <string>
#include <vector>

#include "base/status.h"
#include "runtime/pipeline.h"
#include "runtime/session.h"

namespace systolic::tools {

// Writes {"traceEvents": [...]}: one complete ("ph":"X") event per step of every traced run
// (name = node, cat = op, args = kernel and GFLOP/s) and one per run (cat "run"); ts and dur
// in microseconds.
std::string chrome_trace_json(const runtime::Session& s);
Status write_chrome_trace(const runtime::Session& s, const std::string& path);

// A pipeline run: one track per stage thread (load k, assemble, infer k, results) with a span
// per item or batch, and on each inference track the kernel steps its session traced.
std::string pipeline_trace_json(const runtime::PipelineReport& rep, const std::vector<const runtime::Session*>& sessions);
Status write_pipeline_trace(const runtime::PipelineReport& rep, const std::vector<const runtime::Session*>& sessions,
                            const std::string& path);

}  // namespace systolic::tools
