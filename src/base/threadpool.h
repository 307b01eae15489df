// The thread pool kernels run on: pthreadpool (the pool XNNPACK uses), owned per session.
#pragma once
#include <pthreadpool.h>

#include <cstdint>
#include <memory>

namespace systolic {

// Flags for every parallel loop, in one place. Workers spin between loops (pthreadpool's
// default), which is fastest when the cores are ours: ResNet-50 on 2 threads, alternated runs,
// 76 / 78 / 76 ms spinning vs 101-230 ms with PTHREADPOOL_FLAG_YIELD_WORKERS (each loop then
// pays a futex wake-up). The cost is the other case: beside a CPU-bound process on a 2-core
// machine a spinning worker loses its scheduler share and every loop waits a time slice for
// it (450 ms a run spinning, 141 ms yielding; commands in docs/pipeline.md). Run fewer threads
// than free cores there.
constexpr uint32_t kPoolFlags = 0;

struct ThreadPoolDeleter {
  void operator()(pthreadpool_t p) const { pthreadpool_destroy(p); }
};
using ThreadPool = std::unique_ptr<pthreadpool, ThreadPoolDeleter>;

// threads <= 1 gives a null pool: pthreadpool then runs every loop on the caller.
inline ThreadPool make_thread_pool(int threads) {
  if (threads <= 1) return ThreadPool(nullptr);
  return ThreadPool(pthreadpool_create(static_cast<size_t>(threads)));
}

}  // namespace systolic
