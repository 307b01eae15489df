// SCALE-Sim topology CSV parsing and simulation of its layers.
#include "base/text.h"
#include "sim/scalesim.h"

#include <cctype>
#include <cerrno>
#include <fstream>
#include <sstream>

namespace systolic::sim {
namespace {

// Layer sizes past 2^20 are no network's, and bound the GEMM products (M*K*N) to int64.
constexpr int64_t kMaxDim = int64_t{1} << 20;

bool parse_int(const std::string& s, int64_t* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  *v = std::strtoll(s.c_str(), &end, 10);
  return *end == '\0' && errno == 0;
}

}  // namespace

GemmShape TopologyLayer::gemm() const {
  GemmShape g;
  g.m = ofmap_h() * ofmap_w();
  g.k = filter_h * filter_w * channels;
  g.n = num_filters;
  return g;
}

Expected<std::vector<TopologyLayer>> parse_topology_csv_text(const std::string& text, const std::string& where) {
  std::vector<TopologyLayer> layers;
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    std::vector<std::string> f;
    std::stringstream ls(line);
    std::string cell;
    while (std::getline(ls, cell, ',')) f.push_back(trim(cell));
    while (!f.empty() && f.back().empty()) f.pop_back();
    if (f.empty()) continue;
    int64_t probe;
    if (f.size() > 1 && !parse_int(f[1], &probe)) {
      if (layers.empty()) continue;  // the header row
      return Err("%s:%d: '%s' is not an integer", where.c_str(), lineno, f[1].c_str());
    }
    if (f.size() < 8)
      return Err("%s:%d: expected 8 columns (Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, "
                 "Channels, Num Filter, Strides), got %zu", where.c_str(), lineno, f.size());
    TopologyLayer l;
    l.name = f[0];
    int64_t* dst[] = {&l.ifmap_h, &l.ifmap_w, &l.filter_h, &l.filter_w, &l.channels, &l.num_filters, &l.stride_h};
    for (int i = 0; i < 7; ++i)
      if (!parse_int(f[i + 1], dst[i]) || *dst[i] <= 0 || *dst[i] > kMaxDim)
        return Err("%s:%d: column %d ('%s') must be a positive integer up to 2^20", where.c_str(), lineno, i + 2,
                   f[i + 1].c_str());
    l.stride_w = l.stride_h;
    if (f.size() > 8 && (!parse_int(f[8], &l.stride_w) || l.stride_w <= 0 || l.stride_w > kMaxDim))
      return Err("%s:%d: column 9 ('%s') must be a positive integer stride", where.c_str(), lineno, f[8].c_str());
    if (l.filter_h > l.ifmap_h || l.filter_w > l.ifmap_w)
      return Err("%s:%d: layer %s: the filter is larger than the ifmap", where.c_str(), lineno, l.name.c_str());
    const GemmShape g = l.gemm();
    if (static_cast<double>(g.m) * static_cast<double>(g.k) * static_cast<double>(g.n) > 0x1p60)
      return Err("%s:%d: layer %s is too large to cost (M*K*N past 2^60)", where.c_str(), lineno, l.name.c_str());
    layers.push_back(l);
  }
  if (layers.empty()) return Err("%s: no layers", where.c_str());
  return layers;
}

Expected<std::vector<TopologyLayer>> parse_topology_csv(const std::string& path) {
  std::ifstream f(path);
  if (!f) return Err("cannot read topology %s", path.c_str());
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_topology_csv_text(ss.str(), path);
}

Expected<SimReport> simulate_topology(const std::vector<TopologyLayer>& layers, const target::Target& t,
                                      const SimOptions& o) {
  SimReport r;
  auto rate = begin_report(t, o, 1, &r);
  if (!rate.ok()) return rate.status();
  const double b = rate->bytes;
  for (const auto& l : layers) {
    GemmShape g = l.gemm();
    g.m *= r.batch;
    MatrixOperands ops;
    ops.input_bytes = static_cast<double>(r.batch) * l.ifmap_h * l.ifmap_w * l.channels * b;
    ops.weight_bytes = static_cast<double>(g.k) * g.n * b;
    ops.output_bytes = static_cast<double>(g.m) * g.n * b;
    r.layers.push_back(cost_matrix(l.name, g, ops, t, *rate, o));
    r.layers.back().precision = rate->name;
  }
  finish_report(&r, t, *rate);
  return r;
}

}  // namespace systolic::sim
