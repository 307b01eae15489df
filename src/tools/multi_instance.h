// The commands' name for the library's concurrent instances (api/multi_instance.h).
#pragma once
#include "api/multi_instance.h"
#include "tools/random_inputs.h"

namespace systolic::tools {
using api::InstanceRuns;
using api::Instances;
using api::open_instances;
using api::run_instances;
}  // namespace systolic::tools
