// Rendering a simulation: the per-layer table and totals as text, JSON, and an SVG line chart.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/simulate.h"

namespace systolic::sim {

std::string format_layers(const SimReport& r);   // one row per layer
std::string format_totals(const SimReport& r);   // latency, throughput, utilization, bytes
nlohmann::json report_json(const SimReport& r, bool with_layers = true);

struct ChartSeries {
  std::string label;
  std::vector<double> x, y;
};
// What bounds a run: the resource whose layers take the largest share of the time ("compute",
// "memory", "overhead"), that share, and the layer counts per bound.
struct BoundShare {
  std::string bound;
  double share = 0;
  int compute = 0, memory = 0, overhead = 0;
};
BoundShare bound_share(const SimReport& r);

// A log2-x line chart (batch sizes on x), one polyline per series.
std::string svg_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                      const std::vector<ChartSeries>& series);

// A bar chart: one bar per entry (a target at one batch), its value printed above it and `note`
// (latency, utilization, bound) below its label.
struct ChartBar {
  std::string label, note;
  double value = 0;
};
std::string svg_bars(const std::string& title, const std::string& y_label, const std::vector<ChartBar>& bars);

}  // namespace systolic::sim
