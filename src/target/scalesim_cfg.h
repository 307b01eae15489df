// SCALE-Sim (v2) architecture .cfg files as Targets: one array, 1 GHz, one byte per word.
#pragma once
#include <string>

#include "target/target.h"

namespace systolic::target {

// Reads [architecture_presets] ArrayHeight, ArrayWidth, IfmapSramSzkB, FilterSramSzkB,
// OfmapSramSzkB, Dataflow (os/ws/is) and Bandwidth (words per cycle); "KEY: value" or
// "KEY = value"; '#' and ';' start comments. Missing array dims or an unknown dataflow are errors.
Expected<Target> target_from_scalesim_cfg_text(const std::string& text, const std::string& where);
Expected<Target> target_from_scalesim_cfg(const std::string& path);

}  // namespace systolic::target
