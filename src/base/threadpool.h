// The thread pool kernels run on: pthreadpool (the pool XNNPACK uses), owned per session.
#pragma once
#include <pthreadpool.h>

#include <memory>

namespace systolic {

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
