// NCHW <-> NHWC reorders: the reference and the tiled, pooled transpose (see reorder.h).
#include "kernels/reorder/reorder.h"

#include <algorithm>

#include "base/threadpool.h"

namespace systolic::kernels {
namespace {

// Per image, src is [rows][cols] and dst [cols][rows].
struct Shape2 {
  int64_t n, rows, cols;
};

Shape2 as_matrix(const int64_t* d, int to_nhwc) {
  const int64_t c = d[1], hw = d[2] * d[3];
  return to_nhwc ? Shape2{d[0], c, hw} : Shape2{d[0], hw, c};
}

template <class T>
void reference(const T* src, T* dst, const int64_t* d, int to_nhwc) {
  const Shape2 m = as_matrix(d, to_nhwc);
  for (int64_t n = 0; n < m.n; ++n) {
    const T* s = src + n * m.rows * m.cols;
    T* o = dst + n * m.rows * m.cols;
    for (int64_t j = 0; j < m.cols; ++j)
      for (int64_t i = 0; i < m.rows; ++i) o[j * m.rows + i] = s[i * m.cols + j];
  }
}

// 64-byte lines on both sides: 16 floats or 64 bytes a tile edge.
template <class T>
constexpr int64_t kTile = 64 / sizeof(T);

template <class T>
struct Job {
  const T* src;
  T* dst;
  Shape2 m;
};

template <class T>
void tile(void* ctx, size_t n, size_t i0, size_t j0, size_t ti, size_t tj) {
  const auto& job = *static_cast<const Job<T>*>(ctx);
  const int64_t rows = job.m.rows, cols = job.m.cols;
  const T* s = job.src + static_cast<int64_t>(n) * rows * cols;
  T* o = job.dst + static_cast<int64_t>(n) * rows * cols;
  const auto ie = static_cast<int64_t>(i0 + ti), je = static_cast<int64_t>(j0 + tj);
  if (ti == static_cast<size_t>(kTile<T>) && tj == static_cast<size_t>(kTile<T>)) {
    // Full tile: fixed trip counts, which the compiler unrolls and vectorizes.
    T buf[kTile<T>][kTile<T>];
    for (int64_t i = 0; i < kTile<T>; ++i)
      for (int64_t j = 0; j < kTile<T>; ++j) buf[j][i] = s[(static_cast<int64_t>(i0) + i) * cols + static_cast<int64_t>(j0) + j];
    for (int64_t j = 0; j < kTile<T>; ++j)
      std::copy(buf[j], buf[j] + kTile<T>, o + (static_cast<int64_t>(j0) + j) * rows + static_cast<int64_t>(i0));
    return;
  }
  for (int64_t j = static_cast<int64_t>(j0); j < je; ++j)
    for (int64_t i = static_cast<int64_t>(i0); i < ie; ++i) o[j * rows + i] = s[i * cols + j];
}

// A matrix with a side shorter than a tile (an RGB image: 3 rows of H*W): square tiles would be
// slivers, a pool task per 16 pixels, element by element. Instead a task takes a long run of
// the other side and, per element of it, copies the few values across.
template <class T>
constexpr int64_t kNarrowRun = 4096;

// Rows [lo, hi) of the long side. K > 0 fixes the narrow side's length at compile time (the
// common widths), K = 0 reads it from the matrix.
template <class T, int K>
void narrow_run(const T* s, T* o, int64_t rows, int64_t cols, int64_t lo, int64_t hi) {
  const int64_t k = K > 0 ? K : std::min(rows, cols);
  if (rows == k) {  // [k][cols] -> [cols][k]
    for (int64_t j = lo; j < hi; ++j)
      for (int64_t i = 0; i < k; ++i) o[j * k + i] = s[i * cols + j];
  } else {  // [rows][k] -> [k][rows]
    for (int64_t j = 0; j < k; ++j)
      for (int64_t i = lo; i < hi; ++i) o[j * rows + i] = s[i * k + j];
  }
}

template <class T>
void narrow(void* ctx, size_t n, size_t b0, size_t nb) {
  const auto& job = *static_cast<const Job<T>*>(ctx);
  const int64_t rows = job.m.rows, cols = job.m.cols;
  const T* s = job.src + static_cast<int64_t>(n) * rows * cols;
  T* o = job.dst + static_cast<int64_t>(n) * rows * cols;
  const auto lo = static_cast<int64_t>(b0), hi = static_cast<int64_t>(b0 + nb);
  switch (std::min(rows, cols)) {
    case 1: return narrow_run<T, 1>(s, o, rows, cols, lo, hi);
    case 2: return narrow_run<T, 2>(s, o, rows, cols, lo, hi);
    case 3: return narrow_run<T, 3>(s, o, rows, cols, lo, hi);
    case 4: return narrow_run<T, 4>(s, o, rows, cols, lo, hi);
    default: return narrow_run<T, 0>(s, o, rows, cols, lo, hi);
  }
}

template <class T>
void blocked(const T* src, T* dst, const int64_t* d, int to_nhwc, pthreadpool_t pool) {
  const Job<T> job{src, dst, as_matrix(d, to_nhwc)};
  if (job.m.n == 0 || job.m.rows == 0 || job.m.cols == 0) return;
  if (std::min(job.m.rows, job.m.cols) < kTile<T>) {
    const int64_t len = std::max(job.m.rows, job.m.cols);
    pthreadpool_parallelize_2d_tile_1d(pool, &narrow<T>, const_cast<Job<T>*>(&job), static_cast<size_t>(job.m.n),
                                       static_cast<size_t>(len), static_cast<size_t>(kNarrowRun<T>), kPoolFlags);
    return;
  }
  pthreadpool_parallelize_3d_tile_2d(pool, &tile<T>, const_cast<Job<T>*>(&job), static_cast<size_t>(job.m.n),
                                     static_cast<size_t>(job.m.rows), static_cast<size_t>(job.m.cols),
                                     static_cast<size_t>(kTile<T>), static_cast<size_t>(kTile<T>), kPoolFlags);
}

}  // namespace

void reorder_ref_f32(const float* src, float* dst, const int64_t* d, int to) { reference(src, dst, d, to); }
void reorder_ref_u8(const uint8_t* src, uint8_t* dst, const int64_t* d, int to) { reference(src, dst, d, to); }
void reorder_f32(const float* src, float* dst, const int64_t* d, int to, pthreadpool_t pool) {
  blocked(src, dst, d, to, pool);
}
void reorder_u8(const uint8_t* src, uint8_t* dst, const int64_t* d, int to, pthreadpool_t pool) {
  blocked(src, dst, d, to, pool);
}

}  // namespace systolic::kernels
