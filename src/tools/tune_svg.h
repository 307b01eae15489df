// The `systolic tune` chart: throughput (img/s) and p99 latency (ms) against batch size (log
// scale), one line per thread split, as a self-contained SVG document.
#pragma once
#include <string>
#include <vector>

#include "tools/tune_measure.h"

namespace systolic::tools {

// Rows that do not fit are left out. `recommended` (an index into rows, or -1) is ringed in
// both panels. Each line is a <polyline> with data-panel ("throughput" or "p99") and
// data-split ("IxT") attributes.
std::string tune_svg(const std::vector<TuneRow>& rows, const std::string& title, int recommended = -1);

}  // namespace systolic::tools
