// Hand-written SVG: two stacked panels sharing a log2 batch axis, a legend on the right.
#include "tools/tune_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "tools/svg.h"

namespace systolic::tools {
namespace {

constexpr double kW = 860, kH = 660;
constexpr double kLeft = 80, kRight = 600;  // plot area, x
constexpr double kLegendX = 630;
const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"};

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// A round step (1, 2 or 5 times a power of ten) giving about five ticks up to `max`.
double nice_step(double max) {
  if (max <= 0) return 1;
  const double raw = max / 5, mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

struct Panel {
  const char* name;    // data-panel
  const char* label;   // y axis
  double top, bottom;  // plot area, y
  double (*value)(const TuneRow&);
};

}  // namespace

std::string tune_svg(const std::vector<TuneRow>& rows, const std::string& title, int recommended) {
  std::set<int64_t> batches;
  std::vector<Split> splits;
  for (const TuneRow& r : rows) {
    if (!r.fits) continue;
    batches.insert(r.batch);
    if (std::find(splits.begin(), splits.end(), r.split) == splits.end()) splits.push_back(r.split);
  }
  std::string s;
  s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", kW) + "\" height=\"" + fmt("%.0f", kH) +
       "\" viewBox=\"0 0 " + fmt("%.0f", kW) + " " + fmt("%.0f", kH) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text x=\"" + fmt("%.0f", kW / 2) + "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">" + xml_escape(title) + "</text>\n";
  if (batches.empty()) {
    s += "<text x=\"" + fmt("%.0f", kW / 2) + "\" y=\"" + fmt("%.0f", kH / 2) +
         "\" text-anchor=\"middle\">no configuration fits</text>\n</svg>\n";
    return s;
  }
  // x: log2(batch), padded half a step when there is one batch size only.
  const double lx0 = std::log2(static_cast<double>(*batches.begin())), lx1 = std::log2(static_cast<double>(*batches.rbegin()));
  const double span = lx1 > lx0 ? lx1 - lx0 : 1, off = lx1 > lx0 ? 0 : 0.5;
  const double pad = 20;  // keeps end points off the axes
  auto x_of = [&](int64_t b) {
    return kLeft + pad + (std::log2(static_cast<double>(b)) - lx0 + off) / span * (kRight - kLeft - 2 * pad);
  };
  const Panel panels[] = {
      {"throughput", "throughput (img/s)", 50, 290, [](const TuneRow& r) { return r.throughput_per_s; }},
      {"p99", "p99 latency (ms)", 360, 600, [](const TuneRow& r) { return r.p99_ms; }},
  };
  for (const Panel& p : panels) {
    double max = 0;
    for (const TuneRow& r : rows)
      if (r.fits) max = std::max(max, p.value(r));
    const double step = nice_step(max), ymax = std::max(step, std::ceil(max / step) * step);
    auto y_of = [&](double v) { return p.bottom - v / ymax * (p.bottom - p.top); };
    // Grid, y ticks and axes.
    for (double v = 0; v <= ymax + step / 2; v += step) {
      const std::string y = fmt("%.1f", y_of(v));
      s += "<line x1=\"" + fmt("%.0f", kLeft) + "\" y1=\"" + y + "\" x2=\"" + fmt("%.0f", kRight) + "\" y2=\"" + y +
           "\" stroke=\"#e0e0e0\"/>\n";
      s += "<text x=\"" + fmt("%.0f", kLeft - 6) + "\" y=\"" + y + "\" dy=\"4\" text-anchor=\"end\">" +
           fmt(step < 1 ? "%.2g" : "%.0f", v) + "</text>\n";
    }
    for (int64_t b : batches) {
      const std::string x = fmt("%.1f", x_of(b));
      s += "<line x1=\"" + x + "\" y1=\"" + fmt("%.0f", p.bottom) + "\" x2=\"" + x + "\" y2=\"" +
           fmt("%.0f", p.bottom + 5) + "\" stroke=\"black\"/>\n";
      s += "<text x=\"" + x + "\" y=\"" + fmt("%.0f", p.bottom + 18) + "\" text-anchor=\"middle\">" +
           std::to_string(b) + "</text>\n";
    }
    s += "<polyline fill=\"none\" stroke=\"black\" points=\"" + fmt("%.0f", kLeft) + "," + fmt("%.0f", p.top) + " " +
         fmt("%.0f", kLeft) + "," + fmt("%.0f", p.bottom) + " " + fmt("%.0f", kRight) + "," + fmt("%.0f", p.bottom) + "\"/>\n";
    s += "<text transform=\"translate(" + fmt("%.0f", kLeft - 52) + " " + fmt("%.0f", (p.top + p.bottom) / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + p.label + "</text>\n";
    s += "<text x=\"" + fmt("%.0f", (kLeft + kRight) / 2) + "\" y=\"" + fmt("%.0f", p.bottom + 36) +
         "\" text-anchor=\"middle\">batch size</text>\n";
    // One line per split, points in batch order.
    for (std::size_t k = 0; k < splits.size(); ++k) {
      const char* color = kColors[k % (sizeof kColors / sizeof kColors[0])];
      std::vector<const TuneRow*> pts;
      for (const TuneRow& r : rows)
        if (r.fits && r.split == splits[k]) pts.push_back(&r);
      std::stable_sort(pts.begin(), pts.end(), [](const TuneRow* a, const TuneRow* b) { return a->batch < b->batch; });
      std::string points;
      for (const TuneRow* r : pts) points += (points.empty() ? "" : " ") + fmt("%.1f", x_of(r->batch)) + "," + fmt("%.1f", y_of(p.value(*r)));
      s += std::string("<polyline data-panel=\"") + p.name + "\" data-split=\"" + std::to_string(splits[k].instances) + "x" +
           std::to_string(splits[k].threads) + "\" fill=\"none\" stroke=\"" + color + "\" stroke-width=\"2\" points=\"" +
           points + "\"/>\n";
      for (const TuneRow* r : pts)
        s += "<circle cx=\"" + fmt("%.1f", x_of(r->batch)) + "\" cy=\"" + fmt("%.1f", y_of(p.value(*r))) + "\" r=\"3\" fill=\"" +
             color + "\"/>\n";
    }
    if (recommended >= 0 && recommended < static_cast<int>(rows.size()) && rows[recommended].fits) {
      const TuneRow& r = rows[recommended];
      s += "<circle cx=\"" + fmt("%.1f", x_of(r.batch)) + "\" cy=\"" + fmt("%.1f", y_of(p.value(r))) +
           "\" r=\"8\" fill=\"none\" stroke=\"black\" stroke-width=\"1.5\"/>\n";
    }
  }
  // Legend.
  double ly = 70;
  s += "<text x=\"" + fmt("%.0f", kLegendX) + "\" y=\"" + fmt("%.0f", ly - 16) + "\" font-weight=\"bold\">instances x threads</text>\n";
  for (std::size_t k = 0; k < splits.size(); ++k, ly += 20) {
    const char* color = kColors[k % (sizeof kColors / sizeof kColors[0])];
    s += "<line x1=\"" + fmt("%.0f", kLegendX) + "\" y1=\"" + fmt("%.0f", ly) + "\" x2=\"" + fmt("%.0f", kLegendX + 24) +
         "\" y2=\"" + fmt("%.0f", ly) + "\" stroke=\"" + color + "\" stroke-width=\"2\"/>\n";
    s += "<text x=\"" + fmt("%.0f", kLegendX + 30) + "\" y=\"" + fmt("%.0f", ly) + "\" dy=\"4\">" + xml_escape(split_name(splits[k])) +
         "</text>\n";
  }
  if (recommended >= 0) {
    s += "<circle cx=\"" + fmt("%.0f", kLegendX + 12) + "\" cy=\"" + fmt("%.0f", ly) +
         "\" r=\"8\" fill=\"none\" stroke=\"black\" stroke-width=\"1.5\"/>\n";
    s += "<text x=\"" + fmt("%.0f", kLegendX + 30) + "\" y=\"" + fmt("%.0f", ly) + "\" dy=\"4\">recommended</text>\n";
  }
  s += "</svg>\n";
  return s;
}

}  // namespace systolic::tools
