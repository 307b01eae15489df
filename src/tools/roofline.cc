// Roofline SVG: log-log axes, the machine's roof (and lower peaks dashed), one dot per layer
// with a hover title.
#include "tools/roofline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tools/svg.h"

namespace systolic::tools {
namespace {

template <typename... A>
std::string fmt(const char* f, A... a) {
  char buf[512];
  std::snprintf(buf, sizeof buf, f, a...);
  return buf;
}

}  // namespace

double roofline_attainable(double intensity, double peak_gflops, double bandwidth_gbs) {
  return std::min(peak_gflops, bandwidth_gbs * intensity);
}

std::string roofline_svg(const std::string& title, double peak_gflops, double bandwidth_gbs,
                         const std::vector<RooflinePoint>& points, const std::string& unit,
                         const std::vector<RooflineRoof>& others) {
  const char* u = unit.c_str();
  const double W = 720, H = 460, L = 70, R = 30, T = 40, B = 50;
  const double ridge = bandwidth_gbs > 0 ? peak_gflops / bandwidth_gbs : 1;
  // Axis ranges in decades, covering the ridge, the peak and every dot.
  double x0 = std::min(0.1, ridge / 10), x1 = std::max(100.0, ridge * 10), y0 = peak_gflops / 1000, y1 = peak_gflops * 2;
  for (const auto& p : points) {
    if (p.intensity <= 0 || p.gflops <= 0) continue;
    x0 = std::min(x0, p.intensity / 2), x1 = std::max(x1, p.intensity * 2);
    y0 = std::min(y0, p.gflops / 2), y1 = std::max(y1, p.gflops * 2);
  }
  const double lx0 = std::floor(std::log10(x0)), lx1 = std::ceil(std::log10(x1));
  const double ly0 = std::floor(std::log10(std::max(y0, 1e-6))), ly1 = std::ceil(std::log10(std::max(y1, 1e-5)));
  auto px = [&](double x) { return L + (std::log10(x) - lx0) / (lx1 - lx0) * (W - L - R); };
  auto py = [&](double y) { return H - B - (std::log10(y) - ly0) / (ly1 - ly0) * (H - T - B); };
  std::string s = fmt("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                      W, H);
  s += fmt("<text x=\"%.0f\" y=\"22\" font-size=\"15\">", L) + xml_escape(title) + "</text>\n";
  for (double e = lx0; e <= lx1; ++e) {
    const double x = px(std::pow(10, e));
    s += fmt("<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#ddd\"/>\n", x, T, x, H - B);
    s += fmt("<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%g</text>\n", x, H - B + 16, std::pow(10, e));
  }
  for (double e = ly0; e <= ly1; ++e) {
    const double y = py(std::pow(10, e));
    s += fmt("<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", L, y, W - R, y);
    s += fmt("<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", L - 6, y + 4, std::pow(10, e));
  }
  s += fmt("<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"none\" stroke=\"black\"/>\n", L, T,
           W - L - R, H - T - B);
  s += fmt("<text x=\"%.0f\" y=\"%.0f\" text-anchor=\"middle\">arithmetic intensity (%s/byte)</text>\n", (L + W - R) / 2,
           H - 12, u);
  s += fmt("<text x=\"16\" y=\"%.0f\" transform=\"rotate(-90 16 %.0f)\" text-anchor=\"middle\">G%s/s</text>\n",
           (T + H - B) / 2, (T + H - B) / 2, u);
  // The roof: bandwidth * intensity up to the ridge, then the peak.
  const double xa = std::pow(10, lx0), xb = std::pow(10, lx1);
  const double ya = std::max(roofline_attainable(xa, peak_gflops, bandwidth_gbs), std::pow(10, ly0));
  const double xs = std::max(xa, ya / std::max(bandwidth_gbs, 1e-12));
  s += fmt("<polyline fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\">", px(xs),
           py(ya), px(std::clamp(ridge, xa, xb)), py(peak_gflops), px(xb), py(peak_gflops));
  s += fmt("<title>roof: %.0f G%s/s peak, %.1f GB/s, ridge %.1f %s/B</title></polyline>\n", peak_gflops, u,
           bandwidth_gbs, ridge, u);
  s += fmt("<text x=\"%.0f\" y=\"%.1f\" fill=\"#d62728\" text-anchor=\"end\">peak %.0f G%s/s, %.1f GB/s</text>\n",
           W - R - 6, py(peak_gflops) - 6, peak_gflops, u, bandwidth_gbs);
  for (const RooflineRoof& r : others) {
    if (r.peak <= 0 || r.peak >= peak_gflops) continue;
    const double xr = std::clamp(r.peak / std::max(bandwidth_gbs, 1e-12), xa, xb), y = py(r.peak);
    s += fmt("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" stroke-dasharray=\"6 4\">",
             px(xr), y, px(xb), y);
    s += "<title>" + xml_escape(r.name) + fmt(": %.0f G%s/s</title></line>\n", r.peak, r.unit.c_str());
    s += fmt("<text x=\"%.0f\" y=\"%.1f\" fill=\"#d62728\" text-anchor=\"end\">", W - R - 6, y - 6) +
         xml_escape(r.name) + fmt(" %.0f G%s/s</text>\n", r.peak, r.unit.c_str());
  }
  for (const auto& p : points) {
    if (p.intensity <= 0 || p.gflops <= 0) continue;
    const bool memory = p.intensity < ridge;
    s += fmt("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\" fill-opacity=\"0.7\"><title>", px(p.intensity),
             py(p.gflops), memory ? "#1f77b4" : "#2ca02c") +
         xml_escape(p.label) + fmt(": %.2f %s/B, %.1f G%s/s</title></circle>\n", p.intensity, u, p.gflops, u);
  }
  return s + "</svg>\n";
}

}  // namespace systolic::tools
