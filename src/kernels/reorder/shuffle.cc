// Channel shuffle: the reference loop, and rows in parallel with typed element loops.
#include "kernels/reorder/shuffle.h"

#include <algorithm>
#include <cstring>

#include "base/threadpool.h"

namespace systolic::kernels {
namespace {

// Rows [r0, r1) with elements of type E, one element per (channel, inner) position.
template <class E>
void rows_typed(const ShuffleParams& p, const E* x, E* y, int64_t r0, int64_t r1) {
  const int64_t c = p.groups * p.cg;
  for (int64_t r = r0; r < r1; ++r) {
    const E* xr = x + r * c;
    E* yr = y + r * c;
    for (int64_t j = 0; j < p.cg; ++j)
      for (int64_t i = 0; i < p.groups; ++i) yr[j * p.groups + i] = xr[i * p.cg + j];
  }
}

void rows_bytes(const ShuffleParams& p, const uint8_t* x, uint8_t* y, int64_t r0, int64_t r1) {
  const int64_t run = p.inner * p.elem, row = p.groups * p.cg * run;
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t j = 0; j < p.cg; ++j)
      for (int64_t i = 0; i < p.groups; ++i)
        std::memcpy(y + r * row + (j * p.groups + i) * run, x + r * row + (i * p.cg + j) * run, std::size_t(run));
}

void rows(const ShuffleParams& p, const void* src, void* dst, int64_t r0, int64_t r1) {
  if (p.inner == 1 && p.elem == 4)
    return rows_typed(p, static_cast<const uint32_t*>(src), static_cast<uint32_t*>(dst), r0, r1);
  if (p.inner == 1 && p.elem == 1)
    return rows_typed(p, static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), r0, r1);
  rows_bytes(p, static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), r0, r1);
}

constexpr int64_t kTaskBytes = 32 * 1024;

}  // namespace

void shuffle_channels_ref(const ShuffleParams& p, const void* src, void* dst) {
  const int64_t c = p.groups * p.cg;
  const auto* x = static_cast<const uint8_t*>(src);
  auto* y = static_cast<uint8_t*>(dst);
  for (int64_t r = 0; r < p.rows; ++r)
    for (int64_t co = 0; co < c; ++co) {
      const int64_t j = co / p.groups, i = co % p.groups, ci = i * p.cg + j;
      std::memcpy(y + ((r * c + co) * p.inner) * p.elem, x + ((r * c + ci) * p.inner) * p.elem,
                  std::size_t(p.inner * p.elem));
    }
}

void shuffle_channels(const ShuffleParams& p, const void* src, void* dst, pthreadpool_t pool) {
  const int64_t row = p.groups * p.cg * p.inner * p.elem;
  if (p.rows <= 0 || row <= 0) return;
  const int64_t per_task = std::max<int64_t>(1, kTaskBytes / row);
  if (!pool || p.rows <= per_task) return rows(p, src, dst, 0, p.rows);
  auto task = [&](std::size_t t) {
    const int64_t r0 = int64_t(t) * per_task;
    rows(p, src, dst, r0, std::min(p.rows, r0 + per_task));
  };
  pthreadpool_parallelize_1d(pool, task, std::size_t((p.rows + per_task - 1) / per_task), kPoolFlags);
}

}  // namespace systolic::kernels
