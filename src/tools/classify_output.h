// classify's results: labels, top-k of a score row, and one line of CSV or JSON Lines each.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace systolic::tools {

// One label per line (trailing blanks trimmed); the count must match the model's classes.
Expected<std::vector<std::string>> load_labels(const std::string& path, int64_t classes);

struct Scored {
  int64_t cls = 0;
  float prob = 0;
};
// The k best classes of `row`, highest first (ties: lower class first). With `softmax` the
// row holds logits and the probabilities are computed; otherwise the row is used as given.
void top_k(const float* row, int64_t classes, int k, bool softmax, std::vector<Scored>* out,
           std::vector<float>* scratch);

enum class ResultFormat { csv, jsonl };
// Column names for CSV (path,status,top1,prob1,...,error); empty for JSON Lines.
std::string result_header(ResultFormat f, int k);
// One line (with '\n'): the top-k with labels (or class numbers without labels), or the error
// (CSV keeps k empty top/prob pairs then).
std::string result_line(ResultFormat f, const std::string& path, const std::vector<Scored>& top,
                        const std::vector<std::string>& labels, const std::string& error, int k);

}  // namespace systolic::tools
