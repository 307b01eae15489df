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
// A log2-x line chart (batch sizes on x), one polyline per series.
std::string svg_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                      const std::vector<ChartSeries>& series);

}  // namespace systolic::sim
