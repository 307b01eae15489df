// The roofline model of this machine (the measured peak of a precision and memory bandwidth) and
// its SVG.
#pragma once
#include <string>
#include <vector>

namespace systolic::tools {

struct RooflinePoint {
  std::string label;     // hover title
  double intensity = 0;  // FLOP (int8: OP) per byte
  double gflops = 0;     // achieved G(FL)OP/s
};

// A further flat roof, e.g. the fp32 peak under an int8 plan's int8 peak.
struct RooflineRoof {
  std::string name;           // "fp32 peak"
  double peak = 0;            // G(FL)OP/s
  std::string unit = "FLOP";  // of `peak` (one FLOP and one int8 OP are both half a MAC)
};

// Attainable GFLOP/s at `intensity`: min(peak, bandwidth * intensity).
double roofline_attainable(double intensity, double peak_gflops, double bandwidth_gbs);

// A log-log chart: the roof (bandwidth slope, then the flat peak) and one dot per point with
// its label as a hover title. Points without FLOPs (pure data movement) are left out. `unit`
// is "FLOP" (fp32, bf16) or "OP" (int8); `others` are drawn dashed, below the roof.
std::string roofline_svg(const std::string& title, double peak_gflops, double bandwidth_gbs,
                         const std::vector<RooflinePoint>& points, const std::string& unit = "FLOP",
                         const std::vector<RooflineRoof>& others = {});

}  // namespace systolic::tools
