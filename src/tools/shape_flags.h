// --shape NAME=1x3x48x320 (repeatable), shared by compile, run, bench, profile, simulate,
// compare and quantize: binds an input's symbolic dims other than the batch; --micro-batch N
// (compile, bench, profile): how many items of the batch each pass runs.
#pragma once
#include <CLI/CLI.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "ir/graph.h"

namespace systolic::tools {

void add_shape_flag(CLI::App* cmd, const std::shared_ptr<std::vector<std::string>>& specs);
void add_micro_batch_flag(CLI::App* cmd, const std::shared_ptr<int64_t>& micro);

// Parses NAME=D0xD1x... (positive dims); error naming the spec otherwise or on a repeated name.
Expected<std::map<std::string, ir::Shape>> parse_shapes(const std::vector<std::string>& specs);

// The batch a compile uses: --batch when given (>0); else the leading dim of a --shape;
// else 1. A --batch that contradicts a --shape's leading dim is an error.
Expected<int64_t> batch_with_shapes(int64_t batch, const std::map<std::string, ir::Shape>& shapes);

}  // namespace systolic::tools
