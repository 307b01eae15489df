// Row-copy concatenation: the reference loop, and the same loop over blocks of rows in parallel.
#include "kernels/reorder/concat.h"

#include <algorithm>
#include <cstring>

#include "base/threadpool.h"

namespace systolic::kernels {
namespace {

void copy_block(const void* const* srcs, const int64_t* bytes, const int64_t* strides, int inputs, void* dst,
                int64_t r0, int64_t r1) {
  int64_t row = 0;
  for (int k = 0; k < inputs; ++k) row += bytes[k];
  auto* d = static_cast<uint8_t*>(dst);
  for (int64_t r = r0; r < r1; ++r) {
    uint8_t* out = d + r * row;
    for (int k = 0; k < inputs; ++k) {
      if (bytes[k] == 0) continue;
      std::memcpy(out, static_cast<const uint8_t*>(srcs[k]) + r * (strides ? strides[k] : bytes[k]),
                  std::size_t(bytes[k]));
      out += bytes[k];
    }
  }
}

// Below this many bytes one thread copies faster than waking the pool.
constexpr int64_t kParallelBytes = 64 * 1024;
// Output bytes per task: a few pages, so the pool balances.
constexpr int64_t kTaskBytes = 32 * 1024;

}  // namespace

void concat_rows_ref(const void* const* srcs, const int64_t* bytes, const int64_t* strides, int inputs, void* dst,
                     int64_t rows) {
  copy_block(srcs, bytes, strides, inputs, dst, 0, rows);
}

void concat_rows(const void* const* srcs, const int64_t* bytes, const int64_t* strides, int inputs, void* dst,
                 int64_t rows, pthreadpool_t pool) {
  int64_t row = 0;
  for (int k = 0; k < inputs; ++k) row += bytes[k];
  if (rows <= 0 || row <= 0) return;
  if (!pool || rows * row < kParallelBytes || rows == 1) return copy_block(srcs, bytes, strides, inputs, dst, 0, rows);
  const int64_t per_task = std::max<int64_t>(1, kTaskBytes / row);
  auto task = [&](std::size_t t) {
    const int64_t r0 = int64_t(t) * per_task;
    copy_block(srcs, bytes, strides, inputs, dst, r0, std::min(rows, r0 + per_task));
  };
  pthreadpool_parallelize_1d(pool, task, std::size_t((rows + per_task - 1) / per_task), kPoolFlags);
}

}  // namespace systolic::kernels
