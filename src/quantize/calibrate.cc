// Calibration: min/max per activation in a first pass over the samples, histograms over that
// range in a second (percentile and entropy), then the uint8 parameters per tensor.
#include "quantize/calibrate.h"

#include <algorithm>
#include <cmath>
#include <limits>


namespace systolic::quantize {
namespace {

constexpr int kBins = 2048;

struct Stats {
  float lo = std::numeric_limits<float>::infinity();
  float hi = -std::numeric_limits<float>::infinity();
  std::vector<double> hist;  // |x| over [0, max(|lo|, |hi|)]
  bool finite = true;
};

float amax(const Stats& s) { return std::max(std::fabs(s.lo), std::fabs(s.hi)); }

// The |x| threshold below which `percent` of the histogram's mass lies.
float percentile_threshold(const Stats& s, double percent) {
  double total = 0;
  for (double c : s.hist) total += c;
  if (total <= 0) return amax(s);
  const double want = total * percent / 100.0;
  double acc = 0;
  for (int i = 0; i < kBins; ++i) {
    acc += s.hist[i];
    if (acc >= want) return static_cast<float>((i + 1) * double(amax(s)) / kBins);
  }
  return amax(s);
}

// The |x| threshold whose `levels`-level quantization of the clipped histogram diverges least
// (KL) from it.
float entropy_threshold(const Stats& s, int levels) {
  const std::vector<double>& h = s.hist;
  double best = std::numeric_limits<double>::infinity();
  int best_i = kBins;
  for (int i = levels; i <= kBins; ++i) {
    std::vector<double> p(h.begin(), h.begin() + i);
    double outliers = 0;
    for (int j = i; j < kBins; ++j) outliers += h[j];
    p[i - 1] += outliers;
    // q: p (without the outliers) merged into `levels` bins, spread back over the bins that
    // were non-zero.
    std::vector<double> q(i, 0.0);
    for (int l = 0; l < levels; ++l) {
      const int b0 = int(int64_t(l) * i / levels), b1 = int(int64_t(l + 1) * i / levels);
      double sum = 0;
      int nonzero = 0;
      for (int b = b0; b < b1; ++b) {
        sum += h[b];
        nonzero += h[b] > 0;
      }
      for (int b = b0; b < b1; ++b)
        if (h[b] > 0) q[b] = sum / nonzero;
    }
    double ps = 0, qs = 0;
    for (int b = 0; b < i; ++b) ps += p[b], qs += q[b];
    if (ps <= 0 || qs <= 0) continue;
    double kl = 0;
    for (int b = 0; b < i; ++b) {
      if (p[b] <= 0) continue;
      const double pb = p[b] / ps, qb = q[b] > 0 ? q[b] / qs : 1e-12;
      kl += pb * std::log(pb / qb);
    }
    if (kl < best) best = kl, best_i = i;
  }
  return static_cast<float>((best_i + 0.5) * double(amax(s)) / kBins);
}

}  // namespace

bool parse_method(const std::string& s, Method* m) {
  if (s == "minmax") *m = Method::minmax;
  else if (s == "percentile") *m = Method::percentile;
  else if (s == "entropy") *m = Method::entropy;
  else return false;
  return true;
}

ir::QuantParams uint8_params(float lo, float hi) {
  lo = std::min(lo, 0.f);
  hi = std::max(hi, 0.f);
  ir::QuantParams q;
  q.qtype = ir::DType::u8;
  float scale = (hi - lo) / 255.f;
  if (!(scale > 0.f) || !std::isfinite(scale)) scale = 1.f;  // all zeros (or nothing seen)
  const float zp = std::nearbyint(-lo / scale);
  q.scale = {scale};
  q.zero_point = {static_cast<int32_t>(std::clamp(zp, 0.f, 255.f))};
  return q;
}

plan::CompileOptions calibration_options(const plan::CompileOptions& target) {
  plan::CompileOptions c = target;
  c.precision = passes::Precision::fp32;
  c.precision_auto = false;
  c.activation_quant.reset();
  c.calibrate = nullptr;
  c.fuse_residual = false;
  return c;
}

Expected<QuantMap> calibrate(std::shared_ptr<const plan::Program> fp32, const SampleLoader& load,
                             const CalibrationOptions& o) {
  runtime::SessionOptions so;
  so.threads = o.threads;
  auto session = runtime::Session::create(fp32, so);
  if (!session.ok()) return session.status();
  runtime::Session& s = **session;
  auto loaded = load(s.inputs());
  if (!loaded.ok()) return loaded.status();
  const auto& samples = *loaded;
  if (samples.empty()) return Err("calibration needs at least one sample");
  std::map<std::string, Stats> stats;
  bool histograms = false;
  s.set_observer([&](const ir::Tensor& t, const void* data) {
    if (t.dtype != ir::DType::f32) return;
    const float* v = static_cast<const float*>(data);
    const int64_t n = t.numel();
    Stats& st = stats[t.name];
    if (!histograms) {
      float lo = st.lo, hi = st.hi;
      for (int64_t i = 0; i < n; ++i) {
        lo = std::min(lo, v[i]);
        hi = std::max(hi, v[i]);
      }
      st.lo = lo, st.hi = hi;
      if (!std::isfinite(lo) || !std::isfinite(hi)) st.finite = false;
      return;
    }
    const float m = amax(st);
    if (!(m > 0.f) || !st.finite) return;
    const float k = kBins / m;
    for (int64_t i = 0; i < n; ++i) st.hist[std::min(kBins - 1, static_cast<int>(std::fabs(v[i]) * k))] += 1;
  });
  const int passes = o.method == Method::minmax ? 1 : 2;
  const int total = passes * static_cast<int>(samples.size());
  int done = 0;
  std::vector<runtime::HostTensor> outs;
  for (int pass = 0; pass < passes; ++pass) {
    histograms = pass == 1;
    if (histograms)
      for (auto& [name, st] : stats) st.hist.assign(kBins, 0.0);
    for (const auto& set : samples) {
      std::vector<std::pair<std::string, runtime::HostTensor>> named;
      if (set.size() != s.inputs().size())
        return Err("calibration sample has %zu tensors; the model takes %zu inputs", set.size(), s.inputs().size());
      for (std::size_t k = 0; k < set.size(); ++k) named.emplace_back(s.inputs()[k].name, set[k]);
      Status st = s.run(named, &outs);
      if (!st.ok()) return Err("calibration run: %s", st.message().c_str());
      if (o.progress) o.progress(++done, total);
    }
  }
  QuantMap out;
  for (const auto& [name, st] : stats) {
    if (!st.finite) return Err("calibration: activation %s took non-finite values", name.c_str());
    float lo = st.lo, hi = st.hi;
    if (o.method != Method::minmax) {
      const float t = o.method == Method::percentile ? percentile_threshold(st, o.percentile)
                                                     : entropy_threshold(st, lo >= 0.f ? 256 : 128);
      lo = std::max(lo, -t);
      hi = std::min(hi, t);
    }
    out[name] = uint8_params(lo, hi);
  }
  return out;
}

}  // namespace systolic::quantize
