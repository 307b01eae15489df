// Batched matmul over a vector traits struct T: an MR x (NV*W) register tile read straight from
// row-major A and B (B's rows are contiguous along n, so no packing: at these sizes a K x NR
// panel of B stays in L1 while the rows of a block pass over it), masked loads/stores at the
// n edge, and a row-count switch at the m edge. Include only from ISA files.
#pragma once
#include <algorithm>
#include <cstdint>

#include "base/threadpool.h"
#include "kernels/matmul/matmul.h"

namespace systolic::kernels::matmul {
namespace {

// C tile (MR rows, NV vectors) = A rows x B panel; `cols` < NV*W only when TAIL.
template <class T, int MR, int NV, bool TAIL>
inline void tile(int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                 int cols) {
  using V = typename T::V;
  constexpr int W = T::W;
  int cnt[NV];
  for (int v = 0; v < NV; ++v) cnt[v] = std::clamp(cols - v * W, 0, W);
  V acc[MR][NV];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[r][v] = T::zero();
  for (int64_t p = 0; p < k; ++p) {
    const float* bp = b + p * ldb;
    V bv[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) bv[v] = TAIL ? T::load_n(bp + v * W, cnt[v]) : T::load(bp + v * W);
#pragma GCC unroll 16
    for (int r = 0; r < MR; ++r) {
      const V av = T::bcast(a + r * lda + p);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] = T::fma(av, bv[v], acc[r][v]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      if (TAIL) T::store_n(c + r * ldc + v * W, acc[r][v], cnt[v]);
      else T::store(c + r * ldc + v * W, acc[r][v]);
    }
}

// The m edge: `rows` (1..MR) picks the tile with that many rows at compile time.
template <class T, int MR, int NV, bool TAIL>
inline void tile_rows(int rows, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                      int64_t ldc, int cols) {
  if constexpr (MR > 1)
    if (rows < MR) return tile_rows<T, MR - 1, NV, TAIL>(rows, k, a, lda, b, ldb, c, ldc, cols);
  tile<T, MR, NV, TAIL>(k, a, lda, b, ldb, c, ldc, cols);
}

template <class T, int MR, int NV>
void run(const MatMulParams& p, const float* a, const float* b, float* c, pthreadpool_t pool) {
  constexpr int64_t NR = int64_t{NV} * T::W;
  const int64_t threads = int64_t(pthreadpool_get_threads_count(pool));
  const int64_t want = 4 * threads;  // tasks enough to balance uneven tails
  // Rows per task: up to 8 tiles (A block in L2), fewer when the problem is small.
  int64_t tm = std::min<int64_t>(8 * MR, (p.m + MR - 1) / MR * MR);
  while (tm > MR && p.batch * ((p.m + tm - 1) / tm) < want) tm -= MR;
  int64_t tn = p.n;
  if (const int64_t tasks = p.batch * ((p.m + tm - 1) / tm); tasks < want) {
    const int64_t split = (want + tasks - 1) / tasks;
    tn = std::max(NR, ((p.n + split - 1) / split + NR - 1) / NR * NR);
  }
  auto task = [&](std::size_t t, std::size_t i0, std::size_t j0, std::size_t mi, std::size_t nj) {
    const float* at = a + int64_t(t) * p.a_batch;
    const float* bt = b + int64_t(t) * p.b_batch;
    float* ct = c + int64_t(t) * p.c_batch;
    const int64_t i1 = int64_t(i0 + mi), j1 = int64_t(j0 + nj);
    for (int64_t j = int64_t(j0); j < j1; j += NR) {
      const int cols = int(std::min(NR, j1 - j));
      for (int64_t i = int64_t(i0); i < i1; i += MR) {
        const int rows = int(std::min<int64_t>(MR, i1 - i));
        const float* ai = at + i * p.lda;
        float* ci = ct + i * p.ldc + j;
        if (cols == NR) tile_rows<T, MR, NV, false>(rows, p.k, ai, p.lda, bt + j, p.ldb, ci, p.ldc, cols);
        else tile_rows<T, MR, NV, true>(rows, p.k, ai, p.lda, bt + j, p.ldb, ci, p.ldc, cols);
      }
    }
  };
  pthreadpool_parallelize_3d_tile_2d(pool, task, std::size_t(p.batch), std::size_t(p.m), std::size_t(p.n),
                                     std::size_t(tm), std::size_t(tn), kPoolFlags);
}

}  // namespace
}  // namespace systolic::kernels::matmul
