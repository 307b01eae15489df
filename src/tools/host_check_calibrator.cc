// Calibration rounds for `simulate --check`: the three synthetic convs and the FMA peak, timed
// call by call, and the robust summary the conv model is solved from.
#include "tools/host_check_calibrator.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "kernels/conv/conv.h"
#include "kernels/peak/peak.h"
#include "tools/host_check_stats.h"

namespace systolic::tools {
namespace {

using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};

}  // namespace

// One conv ready to run: inputs, packed weights, output, workspace.
struct ConvCalibrator::Conv {
  const kernels::ConvKernel* k = nullptr;
  kernels::ConvParams p;
  bool ok = false;
  std::vector<float> src, packed, dst, bias;
  std::unique_ptr<float, FreeDeleter> ws;
  kernels::ConvArgs a;

  Conv(const kernels::ConvKernel* kernel, const kernels::ConvParams& shape) : k(kernel), p(shape) {
    std::string why;
    if (!k || !k->accepts(p, host_cpu(), &why)) return;
    const int icg = p.ic / p.groups;
    std::vector<float> w(static_cast<std::size_t>(p.oc) * icg * p.kh * p.kw);
    for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 17) * 0.01f - 0.08f;
    src.resize(static_cast<std::size_t>(p.n) * p.ih * p.iw * p.ic);
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i % 13) * 0.1f - 0.6f;
    dst.resize(static_cast<std::size_t>(p.n) * p.oh * p.ow * p.oc);
    bias.assign(static_cast<std::size_t>(p.oc), 0.1f);
    packed.resize(k->packed_floats(p));
    k->pack(p, w.data(), packed.data());
    const std::size_t ws_bytes = (k->workspace_bytes(p) + 63) / 64 * 64;
    if (ws_bytes) ws.reset(static_cast<float*>(std::aligned_alloc(64, ws_bytes)));
    a.src = src.data();
    a.weights = packed.data();
    a.bias = bias.data();
    a.dst = dst.data();
    a.workspace = ws.get();
    ok = true;
  }
  double run_s(pthreadpool_t pool) {
    if (!ok) return -1;
    const auto t0 = clock_type::now();
    k->run(p, a, pool);
    return seconds_since(t0);
  }
};

ConvCalibrator::ConvCalibrator(const std::string& kernel, int threads)
    : threads_(std::max(1, threads)), pool_(make_thread_pool(threads_)) {
  const kernels::ConvKernel* k = kernels::conv_find(kernel);
  for (const auto& p : {calib_wide(), calib_narrow(), calib_stem(), calib_strided()}) {
    convs_.push_back(std::make_unique<Conv>(k, p));
    for (int i = 0; i < 2; ++i) convs_.back()->run_s(pool_.get());
  }
}

ConvCalibrator::~ConvCalibrator() = default;

bool ConvCalibrator::ok() const { return !convs_.empty() && convs_[0]->ok; }

void ConvCalibrator::round() {
  // The peak: a short FMA loop on every thread at once.
  struct Ctx {
    std::vector<double> flops;
    std::vector<float> sink;
  } ctx{std::vector<double>(static_cast<std::size_t>(threads_)), std::vector<float>(static_cast<std::size_t>(threads_))};
  auto task = [](void* c, size_t i) {
    auto* x = static_cast<Ctx*>(c);
    x->flops[i] = kernels::peak_fp32(host_cpu(), 2'000'000, &x->sink[i]);
  };
  const auto t0 = clock_type::now();
  pthreadpool_parallelize_1d(pool_.get(), task, &ctx, static_cast<size_t>(threads_), 0);
  const double s = seconds_since(t0);
  double flops = 0;
  for (double f : ctx.flops) flops += f;
  rounds_.peak_gflops.push_back(s > 0 ? flops / s / 1e9 : 0);
  rounds_.wide_s.push_back(convs_[0]->run_s(pool_.get()));
  rounds_.narrow_s.push_back(convs_[1]->run_s(pool_.get()));
  rounds_.stem_s.push_back(convs_[2]->run_s(pool_.get()));
  rounds_.strided_s.push_back(convs_[3]->run_s(pool_.get()));
}

ConvCalibration solve_calibration_rounds(const target::HostMeasurements& m, double dispatch_us,
                                         const CalibrationRounds& r) {
  std::vector<double> wide;
  std::vector<double> ratio[3];  // narrow, stem, strided over the same round's wide
  const std::vector<double>* other[3] = {&r.narrow_s, &r.stem_s, &r.strided_s};
  double peak = m.fp32_peak_gflops;
  for (std::size_t i = 0; i < r.wide_s.size(); ++i) {
    if (r.wide_s[i] <= 0) continue;
    wide.push_back(r.wide_s[i]);
    for (int k = 0; k < 3; ++k)
      if (i < other[k]->size() && (*other[k])[i] > 0) ratio[k].push_back((*other[k])[i] / r.wide_s[i]);
  }
  for (double g : r.peak_gflops) peak = std::max(peak, g);
  if (wide.empty()) return {};
  const double w = quantile(wide, 0.5);
  auto scaled = [&](const std::vector<double>& v) { return v.empty() ? -1 : w * quantile(v, 0.5); };
  target::HostMeasurements hm = m;
  hm.fp32_peak_gflops = peak;
  ConvCalibration c = solve_conv_calibration(hm, dispatch_us, {w, scaled(ratio[0]), scaled(ratio[1]), scaled(ratio[2])});
  c.peak_gflops = peak;
  return c;
}

}  // namespace systolic::tools
