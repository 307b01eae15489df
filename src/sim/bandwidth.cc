// Times memcpy of 64 MiB slices between two buffers on every thread of a pool (~0.1 s).
#include "sim/bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "base/threadpool.h"

namespace systolic::sim {

double measured_memory_bandwidth_gbs(int threads) {
  static double cached = 0;
  static int cached_threads = -1;
  if (cached_threads == threads) return cached;
  threads = std::max(1, threads);
  constexpr std::size_t kBytes = std::size_t{64} << 20;  // per buffer: well past any L3 slice
  struct Ctx {
    char* src;
    char* dst;
    std::size_t chunk;
  } ctx{static_cast<char*>(std::aligned_alloc(64, kBytes)), static_cast<char*>(std::aligned_alloc(64, kBytes)),
        kBytes / threads / 64 * 64};
  if (!ctx.src || !ctx.dst) {
    std::free(ctx.src);
    std::free(ctx.dst);
    return 0;
  }
  std::memset(ctx.src, 1, kBytes);  // fault the pages in before timing
  std::memset(ctx.dst, 0, kBytes);
  ThreadPool pool = make_thread_pool(threads);
  auto task = [](void* c, size_t i) {
    auto* x = static_cast<Ctx*>(c);
    std::memcpy(x->dst + i * x->chunk, x->src + i * x->chunk, x->chunk);
  };
  double best = 0, spent = 0;
  for (int rep = 0; rep < 64 && spent < 0.1; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    pthreadpool_parallelize_1d(pool.get(), task, &ctx, threads, 0);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    spent += s;
    best = std::max(best, 2.0 * ctx.chunk * threads / s / 1e9);  // bytes read + bytes written
  }
  std::free(ctx.src);
  std::free(ctx.dst);
  cached = best;
  cached_threads = threads;
  return best;
}

}  // namespace systolic::sim
