// Text, JSON and SVG renderings of a SimReport.
#include "sim/report.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <map>

namespace systolic::sim {
namespace {

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

std::string mib(double b) { return fmt("%.2f MiB", b / 1048576.0); }

// The white canvas, title, both axes and five y ticks every chart here starts from.
template <typename Py>
std::string svg_frame(const std::string& title, double W, double H, double L, double R, double T, double B, double ymax,
                      const Py& py) {
  std::string s = fmt("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" font-family=\"sans-serif\" "
                      "font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n", W, H);
  s += fmt("<text x=\"%.0f\" y=\"22\" font-size=\"15\">%s</text>\n", L, title.c_str());
  s += fmt("<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", L, H - B, W - R, H - B);
  s += fmt("<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"black\"/>\n", L, T, L, H - B);
  for (int i = 0; i <= 4; ++i) {
    const double y = ymax * i / 4;
    s += fmt("<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%.3g</text>\n", L - 6, py(y) + 4, y);
  }
  return s;
}

const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};


}  // namespace

std::string format_layers(const SimReport& r) {
  std::string s = fmt("%-30s %-7s %-10s %-26s %7s %12s %10s %6s %6s %-8s %s\n", "layer", "op", "prec", "gemm MxKxN (groups)",
                      "folds", "cycles", "time us", "util", "map", "bound", "fused");
  for (const auto& l : r.layers) {
    std::string shape = "-", folds = "-", map = "-";
    if (l.matrix) {
      shape = fmt("%lldx%lldx%lld", static_cast<long long>(l.gemm.m), static_cast<long long>(l.gemm.k),
                  static_cast<long long>(l.gemm.n));
      if (l.gemm.groups > 1) shape += fmt(" (%lld)", static_cast<long long>(l.gemm.groups));
      folds = std::to_string(l.map.folds);
      map = fmt("%.0f%%", 100 * l.map.mapping_eff);
    }
    std::string fused = l.fused;
    if (!l.detail.empty()) fused += (fused.empty() ? "" : "  ") + std::string("[") + l.detail + "]";
    // The matrix unit's precision; "int8>bf16" where the plan's int8 layer ran at the bf16 rate.
    std::string prec = l.precision.empty() ? "-" : l.precision;
    if (!l.plan_precision.empty() && l.plan_precision != l.precision) prec = l.plan_precision + ">" + l.precision;
    s += fmt("%-30s %-7s %-10s %-26s %7s %12lld %10.2f %5.1f%% %6s %-8s %s\n", l.name.substr(0, 30).c_str(), l.op.c_str(),
             prec.c_str(), shape.c_str(), folds.c_str(), static_cast<long long>(l.total_cycles), l.time_us, 100 * l.util,
             map.c_str(), l.bound.c_str(), fused.c_str());
  }
  return s;
}

std::string format_totals(const SimReport& r) {
  int compute = 0, memory = 0, overhead = 0;
  for (const auto& l : r.layers) (l.bound == "compute" ? compute : l.bound == "memory" ? memory : overhead)++;
  std::string s;
  std::map<std::string, int> by_prec;
  for (const auto& l : r.layers)
    if (l.matrix) by_prec[l.precision]++;
  std::string precs;
  for (const auto& [p, n] : by_prec) precs += fmt("%s%d %s", precs.empty() ? "" : ", ", n, p.c_str());
  s += fmt("target      %s (%s, batch %lld, %s cycle model)\n", r.target.c_str(), r.precision.c_str(),
           static_cast<long long>(r.batch), r.convention.c_str());
  if (!precs.empty()) s += "precision   matrix layers at " + precs + "\n";
  s += fmt("latency     %.3f ms per batch (%lld cycles, %lld stalled)\n", r.latency_us / 1e3,
           static_cast<long long>(r.total_cycles), static_cast<long long>(r.stall_cycles));
  s += fmt("throughput  %.1f inferences/s\n", r.throughput_per_s);
  s += fmt("matrix      %.2f GMAC, average MXU utilization %.1f%%, mapping efficiency %.1f%%\n", r.macs / 1e9,
           100 * r.mxu_util, 100 * r.mapping_eff);
  s += fmt("layers      %zu (%d compute-bound, %d memory-bound, %d overhead-bound)\n", r.layers.size(), compute, memory,
           overhead);
  s += fmt("traffic     on-chip %s, off-chip %s\n", mib(r.onchip_bytes).c_str(), mib(r.offchip_bytes).c_str());
  for (const auto& n : r.notes) s += "note        " + n + "\n";
  return s;
}

nlohmann::json report_json(const SimReport& r, bool with_layers) {
  nlohmann::json j = {{"target", r.target},
                      {"precision", r.precision},
                      {"batch", r.batch},
                      {"convention", r.convention},
                      {"total_cycles", r.total_cycles},
                      {"compute_cycles", r.compute_cycles},
                      {"stall_cycles", r.stall_cycles},
                      {"latency_ms", r.latency_us / 1e3},
                      {"throughput_per_s", r.throughput_per_s},
                      {"gmacs", r.macs / 1e9},
                      {"mxu_util_pct", 100 * r.mxu_util},
                      {"mapping_efficiency_pct", 100 * r.mapping_eff},
                      {"onchip_bytes", r.onchip_bytes},
                      {"offchip_bytes", r.offchip_bytes},
                      {"notes", r.notes}};
  const BoundShare b = bound_share(r);
  j["bound"] = b.bound;
  j["bound_share"] = b.share;
  j["layers_by_bound"] = {{"compute", b.compute}, {"memory", b.memory}, {"overhead", b.overhead}};
  if (!with_layers) return j;
  j["layers"] = nlohmann::json::array();
  for (const auto& l : r.layers) {
    nlohmann::json x = {{"name", l.name},
                        {"op", l.op},
                        {"total_cycles", l.total_cycles},
                        {"compute_cycles", l.compute_cycles},
                        {"memory_cycles", l.memory_cycles},
                        {"stall_cycles", l.stall_cycles},
                        {"time_us", l.time_us},
                        {"bound", l.bound},
                        {"onchip_bytes", l.onchip_bytes},
                        {"offchip_bytes", l.offchip_bytes},
                        {"mapping_efficiency_pct", l.matrix ? 100 * l.map.mapping_eff : 0.0},
                        {"compute_util_pct", 100 * l.util}};
    if (!l.detail.empty()) x["tiling"] = l.detail;
    if (l.matrix) {
      x["precision"] = l.precision;
      x["plan_precision"] = l.plan_precision.empty() ? l.precision : l.plan_precision;
      x["gemm"] = {{"m", l.gemm.m}, {"k", l.gemm.k}, {"n", l.gemm.n}, {"groups", l.gemm.groups}};
      x["folds"] = l.map.folds;
      x["fused"] = l.fused;
    }
    j["layers"].push_back(x);
  }
  return j;
}

BoundShare bound_share(const SimReport& r) {
  BoundShare b;
  double t[3] = {0, 0, 0}, total = 0;
  for (const auto& l : r.layers) {
    const int k = l.bound == "compute" ? 0 : l.bound == "memory" ? 1 : 2;
    (k == 0 ? b.compute : k == 1 ? b.memory : b.overhead)++;
    t[k] += double(l.total_cycles);
    total += double(l.total_cycles);
  }
  const int k = t[0] >= t[1] && t[0] >= t[2] ? 0 : t[1] >= t[2] ? 1 : 2;
  b.bound = k == 0 ? "compute" : k == 1 ? "memory" : "overhead";
  b.share = total > 0 ? t[k] / total : 0;
  return b;
}

std::string svg_bars(const std::string& title, const std::string& y_label, const std::vector<ChartBar>& bars) {
  const double L = 80, R = 20, T = 40, B = 80, slot = 170;  // room for "a100-sxm4-80gb int8"
  const double W = L + R + slot * std::max<std::size_t>(1, bars.size()), H = 420;
  double ymax = 0;
  for (const auto& b : bars) ymax = std::max(ymax, b.value);
  if (ymax <= 0) ymax = 1;
  auto py = [&](double y) { return H - B - y / ymax * (H - T - B); };
  std::string s = svg_frame(title, W, H, L, R, T, B, ymax, py);
  s += fmt("<text x=\"16\" y=\"%.0f\" transform=\"rotate(-90 16 %.0f)\" text-anchor=\"middle\">%s</text>\n", (T + H - B) / 2,
           (T + H - B) / 2, y_label.c_str());
  for (std::size_t k = 0; k < bars.size(); ++k) {
    const double x = L + slot * k + slot * 0.15, w = slot * 0.7, cx = x + w / 2;
    s += fmt("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", x, py(bars[k].value), w,
             H - B - py(bars[k].value), kColors[k % 8]);
    s += fmt("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.4g</text>\n", cx, py(bars[k].value) - 4, bars[k].value);
    s += fmt("<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n", cx, H - B + 16, bars[k].label.c_str());
    s += fmt("<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\" font-size=\"10\">%s</text>\n", cx, H - B + 32,
             bars[k].note.c_str());
  }
  return s + "</svg>\n";
}

std::string svg_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                      const std::vector<ChartSeries>& series) {
  const double W = 640, H = 400, L = 70, R = 150, T = 40, B = 50;
  double xmin = 1e300, xmax = -1e300, ymax = 0;
  for (const auto& s : series)
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      xmin = std::min(xmin, std::log2(s.x[i]));
      xmax = std::max(xmax, std::log2(s.x[i]));
      ymax = std::max(ymax, s.y[i]);
    }
  if (xmax <= xmin) xmax = xmin + 1;
  if (ymax <= 0) ymax = 1;
  auto px = [&](double x) { return L + (std::log2(x) - xmin) / (xmax - xmin) * (W - L - R); };
  auto py = [&](double y) { return H - B - y / ymax * (H - T - B); };
  std::string s = svg_frame(title, W, H, L, R, T, B, ymax, py);
  if (!series.empty())
    for (double x : series[0].x) s += fmt("<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%g</text>\n", px(x), H - B + 16, x);
  s += fmt("<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">%s</text>\n", (L + W - R) / 2, H - 12, x_label.c_str());
  s += fmt("<text x=\"16\" y=\"%.0f\" transform=\"rotate(-90 16 %.0f)\" text-anchor=\"middle\">%s</text>\n", (T + H - B) / 2,
           (T + H - B) / 2, y_label.c_str());
  for (std::size_t k = 0; k < series.size(); ++k) {
    const char* c = kColors[k % 8];
    std::string pts;
    for (std::size_t i = 0; i < series[k].x.size(); ++i) pts += fmt("%.1f,%.1f ", px(series[k].x[i]), py(series[k].y[i]));
    s += fmt("<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"%s\"/>\n", c, pts.c_str());
    s += fmt("<text x=\"%.0f\" y=\"%.0f\" fill=\"%s\">%s</text>\n", W - R + 10, T + 16.0 * (k + 1), c, series[k].label.c_str());
  }
  return s + "</svg>\n";
}

}  // namespace systolic::sim
