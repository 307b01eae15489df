// Built-in GPU targets (NVIDIA A100, H100, H200): tensor cores as data in the Target record.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "target/target.h"

namespace systolic::target {

std::vector<std::string> gpu_preset_names();
// The preset, by name or alias ("a100" = a100-sxm4-80gb, "h100" = h100-sxm); none if unknown.
std::optional<Target> gpu_preset(const std::string& name);

}  // namespace systolic::target
