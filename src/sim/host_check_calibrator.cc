// Calibration rounds for `simulate --check`: the synthetic convs and the FMA peak, timed
// call by call, and the robust summary the conv model is solved from.
#include "sim/host_check_calibrator.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "base/aligned_vector.h"
#include "kernels/conv/conv.h"
#include "kernels/conv/igemm_blocking.h"
#include "kernels/peak/peak.h"
#include "kernels/reorder/reorder.h"
#include "runtime/session_step.h"
#include "sim/host_check_stats.h"

namespace systolic::sim {
namespace {

using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// Calls of the strided 1x1 and of its twin per round (see round()).
constexpr int kPairCalls = 3;

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};

}  // namespace

// One conv ready to run: inputs, packed weights, output, workspace.
struct ConvCalibrator::Conv {
  const kernels::ConvKernel* k = nullptr;
  kernels::ConvParams p;
  bool ok = false;
  AlignedVector<float> src, packed, dst, bias;  // aligned as a plan's tensors are
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

ConvCalibrator::ConvCalibrator(const std::string& kernel, int threads, pthreadpool_t pool)
    : threads_(std::max(1, threads)), own_(pool ? ThreadPool(nullptr) : make_thread_pool(threads_)),
      pool_(pool ? pool : own_.get()) {
  const kernels::ConvKernel* k = kernels::conv_find(kernel);
  for (const auto& p :
       {calib_wide(), calib_narrow(), calib_stem(), calib_strided(), calib_short(), calib_strided_twin(), calib_deep()}) {
    convs_.push_back(std::make_unique<Conv>(k, p));
    for (int i = 0; i < 2; ++i) convs_.back()->run_s(pool_);
  }
  // The Winograd kernels' transforms, when the plan's ISA has one for the wide shape.
  rounds_.winograd_kernel = calib_winograd_kernel(kernel);
  convs_.push_back(std::make_unique<Conv>(kernels::conv_find(rounds_.winograd_kernel), calib_wide()));
  for (int i = 0; i < 2; ++i) convs_.back()->run_s(pool_);
  // The depthwise kernel of the plan's ISA (vector work, not a GEMM): long rows, short rows and
  // stride 2.
  const kernels::ConvKernel* dw = kernels::conv_find(calib_dw_kernel(kernel));
  for (const auto& p : {calib_dw(), calib_dw_rows(), calib_dw_strided()}) {
    convs_.push_back(std::make_unique<Conv>(dw, p));
    for (int i = 0; i < 2; ++i) convs_.back()->run_s(pool_);
  }
  // The stem on one panel of the kernel's tile: merged kernel rows on row pointers.
  int rows = 0, cols = 0;
  const bool tiled = kernels::igemm::tile_of(kernel, &rows, &cols);
  convs_.push_back(std::make_unique<Conv>(tiled ? k : nullptr, calib_merged(cols)));
  for (int i = 0; i < 2; ++i) convs_.back()->run_s(pool_);
  // The 1x1 over an input past the caches.
  convs_.push_back(std::make_unique<Conv>(k, calib_far()));
  convs_.back()->run_s(pool_);
  // The F(2x2) Winograd kernel's transforms, when the ISA has one besides the first.
  rounds_.winograd2_kernel = calib_winograd2_kernel(kernel);
  convs_.push_back(std::make_unique<Conv>(kernels::conv_find(rounds_.winograd2_kernel), calib_wide()));
  for (int i = 0; i < 2; ++i) convs_.back()->run_s(pool_);
  reorder_src_.assign(kCalibReorderElems, 0.5f);
  reorder_dst_.assign(kCalibReorderElems, 0.0f);
  const double span = std::clamp(2.0 * double(host_cpu().l3_bytes), 64.0 * (1 << 20), 512.0 * (1 << 20));
  dram_.assign(static_cast<std::size_t>(span / sizeof(float)) / 64 * 64, 1.0f);
  std::size_t probes = 0;
  for (std::size_t b : target::kRereadProbes) probes += b / sizeof(float);
  probe_.assign(probes, 1.0f);
  rounds_.reread_gbs.resize(target::kRereadProbes.size());
  sink_.assign(static_cast<std::size_t>(threads_) * 16, 0.0f);
}

ConvCalibrator::~ConvCalibrator() = default;

bool ConvCalibrator::ok() const { return !convs_.empty() && convs_[0]->ok; }

void ConvCalibrator::round() {
  rounds_.dispatch_us.push_back(measured_dispatch_us(pool_, threads_, 16, 0.01));
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
  pthreadpool_parallelize_1d(pool_, task, &ctx, static_cast<size_t>(threads_), 0);
  const double s = seconds_since(t0);
  double flops = 0;
  for (double f : ctx.flops) flops += f;
  rounds_.peak_gflops.push_back(s > 0 ? flops / s / 1e9 : 0);
  rounds_.wide_s.push_back(timed(*convs_[0]));
  rounds_.narrow_s.push_back(timed(*convs_[1]));
  rounds_.stem_s.push_back(timed(*convs_[2]));
  // The strided 1x1 and its twin, whose difference is all the solve takes from them: three
  // calls each, alternating, the fastest of each. On a 2-core Zen 5 single calls of either
  // moved in steps of about 40 us (11%), and one call each put the strided cost anywhere from
  // 1.1 to 3.7 cycles per K step between calibrations; the fastest of three held a round's
  // difference within about 10%, and ten calibrations within 1.3 to 2.1.
  double strided = -1, twin = -1;
  for (int i = 0; i < kPairCalls; ++i) {
    const double s = timed(*convs_[3]), t = timed(*convs_[5]);
    strided = i == 0 ? s : std::min(strided, s);
    twin = i == 0 ? t : std::min(twin, t);
  }
  rounds_.strided_s.push_back(strided);
  rounds_.twin_s.push_back(twin);
  rounds_.short_s.push_back(timed(*convs_[4]));
  rounds_.deep_s.push_back(timed(*convs_[6]));
  if (convs_[7]->ok) rounds_.winograd_s.push_back(timed(*convs_[7]));
  if (convs_[8]->ok) rounds_.dw_s.push_back(timed(*convs_[8], true));
  if (convs_[9]->ok) rounds_.dw_rows_s.push_back(timed(*convs_[9], true));
  if (convs_[10]->ok) rounds_.dw_strided_s.push_back(timed(*convs_[10], true));
  if (convs_[11]->ok) rounds_.merged_s.push_back(timed(*convs_[11]));
  if (convs_[12]->ok) rounds_.far_s.push_back(timed(*convs_[12]));
  if (convs_[13]->ok) rounds_.winograd2_s.push_back(timed(*convs_[13]));
  // The image Reorder, its input just read on the caller (a run copies its input into the arena
  // there just before).
  {
    float sum = 0;
    for (std::size_t i = 0; i < reorder_src_.size(); i += 16) sum += reorder_src_[i];
    sink_[0] += sum;
    const auto t0 = clock_type::now();
    kernels::reorder_f32(reorder_src_.data(), reorder_dst_.data(), kCalibReorderDims, 1, nullptr);
    rounds_.reorder_s.push_back(seconds_since(t0));
  }
  // DRAM: one pass over a buffer twice the L3 (nothing else touched it since the last round, so
  // it comes from memory). Then, for each probed size, a slice of another buffer read twice: the
  // first pass from memory, the second from wherever the first left it (the L3 when it kept it).
  rounds_.dram_gbs.push_back(read_gbs(dram_.data(), dram_.size()));
  std::size_t at = 0;
  for (std::size_t k = 0; k < target::kRereadProbes.size(); ++k) {
    const std::size_t n = target::kRereadProbes[k] / sizeof(float);
    read_gbs(probe_.data() + at, n);
    rounds_.reread_gbs[k].push_back(read_gbs(probe_.data() + at, n));
    at += n;
  }
}

// One timed call with the input just read by the pool's threads, each its slice of the pixels
// (inside a model a layer's input was just written by the layer before it), and the weights
// wherever the model run before the round left them. `touch_out`: the output too, as the arena
// memory a model's layers reuse is (the depthwise conv streams its output as much as its input:
// written into memory the model run had moved out, it ran at 17 GB/s, against 20-55 inside
// MobileNetV2).
double ConvCalibrator::timed(Conv& c, bool touch_out) {
  if (c.ok) read_gbs(c.src.data(), c.src.size());
  if (c.ok && touch_out) read_gbs(c.dst.data(), c.dst.size());
  return c.run_s(pool_);
}

double ConvCalibrator::read_gbs(const float* data, std::size_t n) {
  struct Read {
    const float* data;
    std::size_t slice;
    float* sink;
  } rd{data, n / static_cast<std::size_t>(threads_) / 32 * 32, sink_.data()};
  auto read = [](void* c, size_t i) {
    auto* x = static_cast<Read*>(c);
    using v4 = float __attribute__((vector_size(16)));
    const float* p = x->data + i * x->slice;
    v4 a0{}, a1{}, a2{}, a3{}, a4{}, a5{}, a6{}, a7{};  // independent sums: loads, not adds, bound it
    for (std::size_t j = 0; j + 32 <= x->slice; j += 32) {
      v4 b[8];
      __builtin_memcpy(b, p + j, sizeof b);
      a0 += b[0], a1 += b[1], a2 += b[2], a3 += b[3], a4 += b[4], a5 += b[5], a6 += b[6], a7 += b[7];
    }
    const v4 s = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
    x->sink[i * 16] += s[0] + s[1] + s[2] + s[3];
  };
  const auto t0 = clock_type::now();
  pthreadpool_parallelize_1d(pool_, read, &rd, static_cast<size_t>(threads_), 0);
  const double secs = seconds_since(t0);
  return secs > 0 ? double(rd.slice) * threads_ * sizeof(float) / secs / 1e9 : 0;
}

ConvCalibration solve_calibration_rounds(const target::HostMeasurements& m, double dispatch_us,
                                         const CalibrationRounds& r) {
  std::vector<double> wide;
  // narrow, stem, strided, short, twin, Winograd, deep, depthwise (all three), merged stem, far
  // 1x1, F(2x2) Winograd over the same round's wide
  constexpr int kOthers = 13;
  std::vector<double> ratio[kOthers];
  const std::vector<double>* other[kOthers] = {&r.narrow_s,  &r.stem_s,       &r.strided_s, &r.short_s, &r.twin_s,
                                               &r.winograd_s, &r.deep_s,      &r.dw_s,      &r.dw_rows_s,
                                               &r.dw_strided_s, &r.merged_s,  &r.far_s,     &r.winograd2_s};
  double peak = m.fp32_peak_gflops;
  for (std::size_t i = 0; i < r.wide_s.size(); ++i) {
    if (r.wide_s[i] <= 0) continue;
    wide.push_back(r.wide_s[i]);
    for (int k = 0; k < kOthers; ++k)
      if (i < other[k]->size() && (*other[k])[i] > 0) ratio[k].push_back((*other[k])[i] / r.wide_s[i]);
  }
  for (double g : r.peak_gflops) peak = std::max(peak, g);
  if (wide.empty()) return {};
  // The median wide call (the rounds run between the model's timed runs, whose medians they are
  // compared with); the others keep their ratio to the wide call of their round, which a burst
  // spanning the round leaves be.
  const double w = quantile(wide, 0.5);
  auto scaled = [&](const std::vector<double>& v) { return v.empty() ? -1 : w * quantile(v, 0.5); };
  CalibrationTimes times{w,         scaled(ratio[0]), scaled(ratio[1]), scaled(ratio[2]),
                         scaled(ratio[3]), scaled(ratio[4]), scaled(ratio[5]), r.winograd_kernel,
                         scaled(ratio[6]), scaled(ratio[7]), scaled(ratio[8]), scaled(ratio[9]),
                         scaled(ratio[10]), scaled(ratio[11]), scaled(ratio[12]), r.winograd2_kernel};
  target::HostMeasurements hm = m;
  hm.fp32_peak_gflops = peak;
  // The DRAM the rounds saw: what the first pass over each conv's weights waits for.
  std::vector<double> dram;
  for (double g : r.dram_gbs)
    if (g > 0) dram.push_back(g);
  if (!dram.empty()) hm.dram_read_gbs = quantile(dram, 0.5);
  std::vector<double> disp;
  for (double d : r.dispatch_us)
    if (d > 0) disp.push_back(d);
  if (!disp.empty()) dispatch_us = quantile(disp, 0.5);
  ConvCalibration c = solve_conv_calibration(hm, dispatch_us, times);
  c.peak_gflops = peak;
  c.dispatch_us = disp.empty() ? -1 : dispatch_us;
  c.dram_read_gbs = dram.empty() ? 0 : hm.dram_read_gbs;
  // The Reorder per element, from its ratio to the same round's wide conv like the convs.
  std::vector<double> reorder;
  for (std::size_t i = 0; i < r.wide_s.size() && i < r.reorder_s.size(); ++i)
    if (r.wide_s[i] > 0 && r.reorder_s[i] > 0) reorder.push_back(r.reorder_s[i] / r.wide_s[i]);
  if (!reorder.empty()) c.reorder_elem_ns = w * quantile(reorder, 0.5) * 1e9 / double(kCalibReorderElems);
  for (std::size_t k = 0; k < r.reread_gbs.size() && k < c.reread_gbs.size(); ++k) {
    std::vector<double> v;
    for (double g : r.reread_gbs[k])
      if (g > 0) v.push_back(g);
    c.reread_gbs[k] = v.empty() ? 0 : quantile(v, 0.5);
  }
  return c;
}

}  // namespace systolic::sim
