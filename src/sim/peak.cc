// Times each precision's calibration loop (kernels/peak) on every thread of a pool at once,
// the best of three (~0.1 s per loop), once per process and thread count.
#include "sim/peak.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "base/threadpool.h"
#include "kernels/peak/peak.h"

namespace systolic::sim {
namespace {

double time_loop(const kernels::PeakLoop& loop, int threads) {
  ThreadPool pool = make_thread_pool(threads);
  struct Ctx {
    const kernels::PeakLoop* loop;
    std::vector<double> ops, sink;
  } ctx{&loop, std::vector<double>(threads), std::vector<double>(threads)};
  auto task = [](void* c, size_t i) {
    auto* x = static_cast<Ctx*>(c);
    x->ops[i] = x->loop->run(x->loop->iters, &x->sink[i]);
  };
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    pthreadpool_parallelize_1d(pool.get(), task, &ctx, threads, 0);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double total = 0;
    for (double f : ctx.ops) total += f;
    if (s > 0) best = std::max(best, total / s / 1e9);
  }
  return best;
}

// A loop's measurement, by loop and thread count.
double measured(const kernels::PeakLoop& loop, int threads) {
  static std::mutex mu;
  static std::map<std::pair<const kernels::PeakLoop*, int>, double> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto [it, fresh] = cache.try_emplace({&loop, threads}, 0.0);
  if (fresh) it->second = time_loop(loop, threads);
  return it->second;
}

// The scalar stand-in for a machine without AVX2+FMA (only fp32 has one).
const kernels::PeakLoop kScalarFp32 = {"fp32", "scalar multiply-add", nullptr,
                                       [](int64_t iters, double* sink) {
                                         float s = 0;
                                         const double ops = kernels::peak_fp32(host_cpu(), iters, &s);
                                         *sink = s;
                                         return ops;
                                       },
                                       20'000'000};

}  // namespace

std::vector<MeasuredPeak> measured_peaks(int threads) {
  threads = std::max(threads, 1);
  std::size_t n;
  const kernels::PeakLoop* loops = kernels::peak_loops(&n);
  std::vector<MeasuredPeak> out;
  for (const char* precision : {"fp32", "int8", "bf16"}) {
    bool any = false;
    for (std::size_t i = 0; i < n; ++i)
      if (loops[i].precision == std::string(precision) && loops[i].available(host_cpu())) {
        out.push_back({precision, loops[i].instruction, measured(loops[i], threads), false});
        any = true;
      }
    if (!any) out.push_back(measured_peak(precision, threads));  // what stands in for it
  }
  return out;
}

MeasuredPeak measured_peak(const std::string& precision, int threads) {
  const std::string want = precision == "int8" || precision == "bf16" ? precision : "fp32";
  threads = std::max(threads, 1);
  std::size_t n;
  const kernels::PeakLoop* loops = kernels::peak_loops(&n);
  // The first available loop of the precision is its fastest instruction. Without AMX, where
  // vdpbf16ps measured slower than FMA, bf16 plans run on the fp32 kernels (the rule the bf16
  // kernels' choice follows), whose peak stands in below.
  const CpuFeatures& cpu = host_cpu();
  const bool bf16_on_fma = !cpu.amx_bf16 && cpu.bf16_rate.fma_wins();
  for (std::size_t i = 0; i < n; ++i)
    if (loops[i].precision == want && loops[i].available(cpu) && !(want == "bf16" && bf16_on_fma))
      return {want, loops[i].instruction, measured(loops[i], threads), false};
  if (want == "fp32") return {want, kScalarFp32.instruction, measured(kScalarFp32, threads), false};
  if (want == "bf16") {
    MeasuredPeak fp32 = measured_peak("fp32", threads);
    return {want, "fp32 " + fp32.instruction + " on bf16 storage", fp32.g_per_s, true};
  }
  // int8 without AVX2: the kernels run the reference's scalar loops; the fp32 peak is the
  // closest measure of what the core does.
  MeasuredPeak fp32 = measured_peak("fp32", threads);
  return {want, "the reference kernel's scalar loops", fp32.g_per_s, true};
}

double measured_fp32_peak_gflops(int threads) { return measured_peak("fp32", threads).g_per_s; }
double measured_int8_peak_gops(int threads) { return measured_peak("int8", threads).g_per_s; }
double measured_bf16_peak_gflops(int threads) { return measured_peak("bf16", threads).g_per_s; }

std::string kernel_precision(const std::string& kernel) {
  if (kernel.rfind("q", 0) == 0) return "int8";
  if (kernel.find("bf16") != std::string::npos) return "bf16";
  return "fp32";
}

const char* ops_unit(const std::string& precision) { return precision == "int8" ? "GOP" : "GFLOP"; }

}  // namespace systolic::sim
