// The commands' names for the library's tune sweep (api/tune_sweep.h).
#pragma once
#include "api/tune_sweep.h"
#include "tools/tune_measure.h"

namespace systolic::tools {
using api::Budgets;
using api::meets_budgets;
using api::MeasureFn;
using api::recommend;
using api::run_sweep;
using api::SweepOptions;
using api::thread_splits;
}  // namespace systolic::tools
