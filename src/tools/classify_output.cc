#include "tools/classify_output.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

namespace systolic::tools {
namespace {

// RFC 4180: quote fields holding a comma, quote or line break; double inner quotes.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string name_of(int64_t cls, const std::vector<std::string>& labels) {
  return cls >= 0 && cls < static_cast<int64_t>(labels.size()) ? labels[static_cast<std::size_t>(cls)] : std::to_string(cls);
}

}  // namespace

Expected<std::vector<std::string>> load_labels(const std::string& path, int64_t classes) {
  std::ifstream f(path);
  if (!f) return Err("cannot open the labels file %s", path.c_str());
  std::vector<std::string> labels;
  std::string line;
  while (std::getline(f, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    labels.push_back(line);
  }
  while (!labels.empty() && labels.back().empty()) labels.pop_back();
  if (static_cast<int64_t>(labels.size()) != classes)
    return Err("%s has %zu labels; the model has %lld classes", path.c_str(), labels.size(), static_cast<long long>(classes));
  return labels;
}

void top_k(const float* row, int64_t classes, int k, bool softmax, std::vector<Scored>* out,
           std::vector<float>* scratch) {
  std::vector<float>& p = *scratch;
  p.assign(row, row + classes);
  if (softmax && classes > 0) {
    const float mx = *std::max_element(p.begin(), p.end());
    double sum = 0;
    for (float& v : p) sum += (v = std::exp(v - mx));
    for (float& v : p) v = static_cast<float>(v / sum);
  }
  const int64_t kk = std::min<int64_t>(std::max(k, 0), classes);
  out->clear();
  for (int64_t c = 0; c < classes; ++c) {
    // Insertion into a k-long sorted list: k is small (5), classes ~1000.
    if (static_cast<int64_t>(out->size()) == kk && (kk == 0 || !(p[c] > out->back().prob))) continue;
    Scored s{c, p[c]};
    auto at = std::find_if(out->begin(), out->end(), [&](const Scored& o) { return s.prob > o.prob; });
    out->insert(at, s);
    if (static_cast<int64_t>(out->size()) > kk) out->pop_back();
  }
}

std::string result_header(ResultFormat f, int k) {
  if (f == ResultFormat::jsonl) return "";
  std::string h = "path,status";
  for (int i = 1; i <= k; ++i) h += ",top" + std::to_string(i) + ",prob" + std::to_string(i);
  return h + ",error\n";
}

std::string result_line(ResultFormat f, const std::string& path, const std::vector<Scored>& top,
                        const std::vector<std::string>& labels, const std::string& error, int k) {
  const bool ok = error.empty();
  if (f == ResultFormat::jsonl) {
    nlohmann::json j = {{"path", path}, {"status", ok ? "ok" : "error"}};
    if (ok) {
      j["top"] = nlohmann::json::array();
      for (const Scored& s : top) {
        nlohmann::json e = {{"class", s.cls}, {"prob", s.prob}};
        if (!labels.empty()) e["label"] = name_of(s.cls, labels);
        j["top"].push_back(e);
      }
    } else {
      j["error"] = error;
    }
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  std::string line = csv_field(path) + (ok ? ",ok" : ",error");
  char prob[32];
  for (const Scored& s : top) {
    std::snprintf(prob, sizeof prob, "%.6f", s.prob);
    line += "," + csv_field(name_of(s.cls, labels)) + "," + prob;
  }
  for (int i = static_cast<int>(top.size()); i < k; ++i) line += ",,";  // columns stay aligned
  return line + "," + csv_field(error) + "\n";
}

}  // namespace systolic::tools
