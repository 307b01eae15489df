#include "kernels/thread_scratch.h"

#include <cstdlib>
#include <memory>

namespace systolic::kernels {

void* thread_scratch(std::size_t bytes) {
  struct Buf {
    std::unique_ptr<void, decltype(&std::free)> p{nullptr, std::free};
    std::size_t n = 0;
  };
  thread_local Buf b;
  if (b.n < bytes) {
    b.p.reset(std::aligned_alloc(64, (bytes + 63) / 64 * 64));
    b.n = b.p ? bytes : 0;
  }
  return b.p.get();
}

}  // namespace systolic::kernels
