// Times the FMA calibration loop on every thread of a pool at once (~0.1 s).
#include "tools/peak.h"

#include <chrono>
#include <vector>

#include "base/threadpool.h"
#include "kernels/peak/peak.h"

namespace systolic::tools {

double measured_fp32_peak_gflops(int threads) {
  static double cached = 0;
  static int cached_threads = -1;
  if (cached_threads == threads) return cached;
  ThreadPool pool = make_thread_pool(threads);
  struct Ctx {
    std::vector<double> flops;
    std::vector<float> sink;
  } ctx{std::vector<double>(threads), std::vector<float>(threads)};
  auto task = [](void* c, size_t i) {
    auto* x = static_cast<Ctx*>(c);
    x->flops[i] = kernels::peak_fp32(host_cpu(), 20'000'000, &x->sink[i]);
  };
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    pthreadpool_parallelize_1d(pool.get(), task, &ctx, threads, 0);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double total = 0;
    for (double f : ctx.flops) total += f;
    best = std::max(best, total / s / 1e9);
  }
  cached = best;
  cached_threads = threads;
  return best;
}

}  // namespace systolic::tools
