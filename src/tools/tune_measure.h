// The commands' names for the library's tune measurement (api/tune_measure.h).
#pragma once
#include "api/tune_measure.h"

namespace systolic::tools {
using api::can_measure_peak_rss;
using api::estimate_footprint;
using api::Footprint;
using api::measure_config;
using api::MeasureOptions;
using api::parse_bytes;
using api::size_str;
using api::Split;
using api::split_name;
using api::TuneRow;
}  // namespace systolic::tools
