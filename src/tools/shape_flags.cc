#include "tools/shape_flags.h"

#include <cstdlib>

namespace systolic::tools {

void add_shape_flag(CLI::App* cmd, const std::shared_ptr<std::vector<std::string>>& specs) {
  cmd->add_option("--shape", *specs, "bind an input's symbolic dims: NAME=1x3x48x320 (repeatable)");
}

void add_micro_batch_flag(CLI::App* cmd, const std::shared_ptr<int64_t>& micro) {
  cmd->add_option("--micro-batch", *micro,
                  "run the batch as runs of this many items (must divide it; default: chosen for the caches)")
      ->check(CLI::PositiveNumber);
}

Expected<std::map<std::string, ir::Shape>> parse_shapes(const std::vector<std::string>& specs) {
  std::map<std::string, ir::Shape> out;
  for (const std::string& spec : specs) {
    const auto eq = spec.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      return Err("--shape %s: expected NAME=D0xD1x... (e.g. input=1x3x48x320)", spec.c_str());
    ir::Shape s;
    std::size_t pos = eq + 1;
    while (pos <= spec.size()) {
      std::size_t end = spec.find('x', pos);
      if (end == std::string::npos) end = spec.size();
      const std::string dim = spec.substr(pos, end - pos);
      char* stop = nullptr;
      const long long v = dim.empty() ? 0 : std::strtoll(dim.c_str(), &stop, 10);
      if (dim.empty() || *stop != '\0' || v <= 0 || v > (1LL << 40))
        return Err("--shape %s: dimension '%s' is not a positive integer", spec.c_str(), dim.c_str());
      s.push_back(v);
      pos = end + 1;
    }
    const std::string name = spec.substr(0, eq);
    if (!out.emplace(name, s).second) return Err("--shape %s: input %s is given twice", spec.c_str(), name.c_str());
  }
  return out;
}

Expected<int64_t> batch_with_shapes(int64_t batch, const std::map<std::string, ir::Shape>& shapes) {
  if (shapes.empty()) return batch > 0 ? batch : 1;
  const int64_t lead = shapes.begin()->second[0];
  if (batch > 0 && batch != lead)
    return Err("--batch %lld contradicts --shape %s=%s (leading dim %lld)", static_cast<long long>(batch),
               shapes.begin()->first.c_str(), ir::shape_str(shapes.begin()->second).c_str(), static_cast<long long>(lead));
  return lead;
}

}  // namespace systolic::tools
