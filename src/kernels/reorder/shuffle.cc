// Channel shuffle: the reference loop, and rows in parallel with typed element loops.
#include "kernels/reorder/shuffle.h"

#include <algorithm>
#include <cstring>

#include "base/threadpool.h"

namespace systolic::kernels {
namespace {

// Rows [r0, r1) with one element of type E per channel (inner = 1).
template <class E>
void rows_typed(const ShuffleParams& p, const void* const* srcs, void* dst, int64_t r0, int64_t r1) {
  const int64_t g = p.groups, c = g * p.cg;
  for (int64_t r = r0; r < r1; ++r) {
    E* y = static_cast<E*>(dst) + r * c;
    if (g == 2) {  // ShuffleNet: two branches interleaved
      const E* a = reinterpret_cast<const E*>(static_cast<const uint8_t*>(srcs[0]) + r * p.src_stride);
      const E* b = reinterpret_cast<const E*>(static_cast<const uint8_t*>(srcs[1]) + r * p.src_stride);
      for (int64_t j = 0; j < p.cg; ++j) y[2 * j] = a[j], y[2 * j + 1] = b[j];
      continue;
    }
    for (int64_t i = 0; i < g; ++i) {
      const E* x = reinterpret_cast<const E*>(static_cast<const uint8_t*>(srcs[i]) + r * p.src_stride);
      for (int64_t j = 0; j < p.cg; ++j) y[j * g + i] = x[j];
    }
  }
}

void rows_bytes(const ShuffleParams& p, const void* const* srcs, void* dst, int64_t r0, int64_t r1) {
  const int64_t run = p.inner * p.elem, row = p.groups * p.cg * run;
  auto* y = static_cast<uint8_t*>(dst);
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t i = 0; i < p.groups; ++i) {
      const auto* x = static_cast<const uint8_t*>(srcs[i]) + r * p.src_stride;
      for (int64_t j = 0; j < p.cg; ++j)
        std::memcpy(y + r * row + (j * p.groups + i) * run, x + j * run, std::size_t(run));
    }
}

void rows(const ShuffleParams& p, const void* const* srcs, void* dst, int64_t r0, int64_t r1) {
  if (p.inner == 1 && p.elem == 4) return rows_typed<uint32_t>(p, srcs, dst, r0, r1);
  if (p.inner == 1 && p.elem == 2) return rows_typed<uint16_t>(p, srcs, dst, r0, r1);
  if (p.inner == 1 && p.elem == 1) return rows_typed<uint8_t>(p, srcs, dst, r0, r1);
  rows_bytes(p, srcs, dst, r0, r1);
}

constexpr int64_t kTaskBytes = 32 * 1024;

}  // namespace

void shuffle_channels_ref(const ShuffleParams& p, const void* const* srcs, void* dst) {
  const int64_t c = p.groups * p.cg, run = p.inner * p.elem;
  auto* y = static_cast<uint8_t*>(dst);
  for (int64_t r = 0; r < p.rows; ++r)
    for (int64_t co = 0; co < c; ++co) {
      const int64_t j = co / p.groups, i = co % p.groups;
      std::memcpy(y + (r * c + co) * run, static_cast<const uint8_t*>(srcs[i]) + r * p.src_stride + j * run,
                  std::size_t(run));
    }
}

void shuffle_channels(const ShuffleParams& p, const void* const* srcs, void* dst, pthreadpool_t pool) {
  const int64_t row = p.groups * p.cg * p.inner * p.elem;
  if (p.rows <= 0 || row <= 0) return;
  const int64_t per_task = std::max<int64_t>(1, kTaskBytes / row);
  if (!pool || p.rows <= per_task) return rows(p, srcs, dst, 0, p.rows);
  auto task = [&](std::size_t t) {
    const int64_t r0 = int64_t(t) * per_task;
    rows(p, srcs, dst, r0, std::min(p.rows, r0 + per_task));
  };
  pthreadpool_parallelize_1d(pool, task, std::size_t((p.rows + per_task - 1) / per_task), kPoolFlags);
}

}  // namespace systolic::kernels
