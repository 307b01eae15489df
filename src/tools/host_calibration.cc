// The host measurements behind `simulate --target host --check`: pool dispatch cost, the conv
// kernel's efficiency on a fixed calibration shape, the microkernel tile, peak and bandwidth.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <regex>
#include <vector>

#include "base/threadpool.h"
#include "interp/nn_geometry.h"
#include "kernels/conv/conv.h"
#include "tools/bandwidth.h"
#include "tools/host_check.h"
#include "tools/peak.h"

namespace systolic::tools {
namespace {

using clock_type = std::chrono::steady_clock;
double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

}  // namespace

double measured_dispatch_us(int threads) {
  ThreadPool pool = make_thread_pool(threads);
  std::atomic<int> sink{0};
  auto task = [](void* c, size_t i) { static_cast<std::atomic<int>*>(c)->fetch_add(static_cast<int>(i), std::memory_order_relaxed); };
  std::vector<double> us;
  const auto start = clock_type::now();
  for (int rep = 0; rep < 2000 && seconds_since(start) < 0.05; ++rep) {
    const auto t0 = clock_type::now();
    pthreadpool_parallelize_1d(pool.get(), task, &sink, static_cast<size_t>(std::max(1, threads)), 0);
    us.push_back(seconds_since(t0) * 1e6);
  }
  return median(us);
}

double measured_conv_efficiency(const std::string& kernel, int threads, double peak_gflops, double dispatch_us) {
  const kernels::ConvKernel* k = kernels::conv_find(kernel);
  if (!k || peak_gflops <= 0) return 0;
  kernels::ConvParams p;
  p.ih = p.iw = p.oh = p.ow = 32;
  p.ic = p.oc = 128;
  p.kh = p.kw = 3;
  p.pad_t = p.pad_l = 1;
  std::string why;
  if (!k->accepts(p, host_cpu(), &why)) return 0;
  std::vector<float> w(static_cast<std::size_t>(p.oc) * p.ic * 9), src(static_cast<std::size_t>(32) * 32 * 128),
      dst(src.size()), bias(p.oc, 0.1f), packed(k->packed_floats(p));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 17) * 0.01f - 0.08f;
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<float>(i % 13) * 0.1f - 0.6f;
  k->pack(p, w.data(), packed.data());
  const std::size_t ws_bytes = (k->workspace_bytes(p) + 63) / 64 * 64;
  float* ws = ws_bytes ? static_cast<float*>(std::aligned_alloc(64, ws_bytes)) : nullptr;
  kernels::ConvArgs a;
  a.src = src.data();
  a.weights = packed.data();
  a.bias = bias.data();
  a.dst = dst.data();
  a.workspace = ws;
  ThreadPool pool = make_thread_pool(threads);
  const double flops = 2.0 * p.oh * p.ow * p.oc * p.ic * 9;
  for (int i = 0; i < 2; ++i) k->run(p, a, pool.get());
  std::vector<double> gflops;
  const auto start = clock_type::now();
  for (int rep = 0; rep < 50 && (rep < 5 || seconds_since(start) < 0.2); ++rep) {
    const auto t0 = clock_type::now();
    k->run(p, a, pool.get());
    gflops.push_back(flops / seconds_since(t0) / 1e9);
  }
  std::free(ws);
  // The simulator charges the pool dispatch separately, so it is taken out of the kernel's
  // time here (never below the time at peak).
  const double secs = std::max(flops / median(gflops) / 1e9 - dispatch_us * 1e-6, flops / (peak_gflops * 1e9));
  return flops / secs / 1e9 / peak_gflops;
}

std::string dominant_conv_kernel(const plan::Program& p, int* rows, int* cols) {
  *rows = *cols = 0;
  std::string best;
  double best_flops = -1;
  std::vector<std::pair<std::string, double>> by_kernel;
  for (const ir::Node& n : p.graph.nodes) {
    if (n.op != ir::Op::Conv || !n.has("kernel") || !n.has("conv_params")) continue;
    kernels::ConvParams cp;
    if (!interp::decode_conv_params(n.ints("conv_params"), &cp)) continue;
    const double f = 2.0 * cp.n * cp.oh * cp.ow * cp.oc * (cp.ic / cp.groups) * cp.kh * cp.kw;
    const std::string k = n.s("kernel", "");
    auto it = std::find_if(by_kernel.begin(), by_kernel.end(), [&](const auto& e) { return e.first == k; });
    if (it == by_kernel.end()) by_kernel.push_back({k, f});
    else it->second += f;
  }
  for (const auto& [k, f] : by_kernel)
    if (f > best_flops) best = k, best_flops = f;
  std::smatch m;
  if (std::regex_search(best, m, std::regex("_([0-9]+)x([0-9]+)_"))) {
    *rows = std::stoi(m[1]);
    *cols = std::stoi(m[2]);
  }
  return best;
}

target::HostMeasurements measure_host(const plan::Program& p, int threads) {
  target::HostMeasurements m;
  m.threads = threads;
  m.fp32_peak_gflops = measured_fp32_peak_gflops(threads);
  m.dram_gbs = measured_memory_bandwidth_gbs(threads);
  m.launch_us = measured_dispatch_us(threads);
  const std::string k = dominant_conv_kernel(p, &m.tile_rows, &m.tile_cols);
  if (!k.empty()) m.conv_efficiency = measured_conv_efficiency(k, threads, m.fp32_peak_gflops, m.launch_us);
  return m;
}

}  // namespace systolic::tools
