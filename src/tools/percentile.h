// The commands' name for the library's percentile (api/percentile.h).
#pragma once
#include "api/percentile.h"

namespace systolic::tools {
using api::percentile;
}  // namespace systolic::tools
