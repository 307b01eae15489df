// The thread pool kernels run on: pthreadpool (the pool XNNPACK uses), owned per session.
#pragma once
#include <pthreadpool.h>

#include <cstdint>
#include <memory>

namespace systolic {

// Flags for every parallel loop: workers sleep on a futex as soon as a loop ends instead of
// spinning. A spinning worker burns its scheduler share, so when another process holds a core
// the worker is descheduled and every loop waits a time slice for it (ResNet-50 on 2 threads
// beside one busy process: 450 ms a run spinning, 141 ms sleeping); a sleeping worker is woken
// with a fresh share and preempts at once. Unloaded, the wake-up costs nothing measurable
// (54 vs 56 ms). It also leaves the CPU to a pipeline's loader threads between loops.
constexpr uint32_t kPoolFlags = PTHREADPOOL_FLAG_YIELD_WORKERS;

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
