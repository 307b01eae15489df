// The roofline model of this machine (measured fp32 peak and memory bandwidth) and its SVG.
#pragma once
#include <string>
#include <vector>

namespace systolic::tools {

struct RooflinePoint {
  std::string label;     // hover title
  double intensity = 0;  // FLOP per byte
  double gflops = 0;     // achieved
};

// Attainable GFLOP/s at `intensity`: min(peak, bandwidth * intensity).
double roofline_attainable(double intensity, double peak_gflops, double bandwidth_gbs);

// A log-log chart: the roof (bandwidth slope, then the flat peak) and one dot per point with
// its label as a hover title. Points without FLOPs (pure data movement) are left out.
std::string roofline_svg(const std::string& title, double peak_gflops, double bandwidth_gbs,
                         const std::vector<RooflinePoint>& points);

}  // namespace systolic::tools
