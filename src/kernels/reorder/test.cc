// The tiled reorder against the reference, for equality: both directions, float and byte,
// shapes with ragged tiles on either side (1 channel, 3 channels, 1x1 pixels, odd sizes),
// batches, with and without a pool.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "base/threadpool.h"
#include "kernels/reorder/reorder.h"

namespace systolic::kernels {
namespace {

template <class T>
void check(const int64_t* d, int to, pthreadpool_t pool) {
  const int64_t n = d[0] * d[1] * d[2] * d[3];
  std::vector<T> x(static_cast<std::size_t>(n));
  std::iota(x.begin(), x.end(), T(1));  // distinct values (bytes wrap, positions still differ by layout)
  std::vector<T> want(x.size(), T(0)), got(x.size(), T(0));
  if constexpr (sizeof(T) == 1) {
    reorder_ref_u8(x.data(), want.data(), d, to);
    reorder_u8(x.data(), got.data(), d, to, pool);
  } else {
    reorder_ref_f32(x.data(), want.data(), d, to);
    reorder_f32(x.data(), got.data(), d, to, pool);
  }
  EXPECT_EQ(got, want) << d[0] << "x" << d[1] << "x" << d[2] << "x" << d[3] << " to " << to;
}

TEST(Reorder, ReferenceTransposesEachImage) {
  const int64_t d[4] = {1, 2, 1, 3};  // NCHW [2][3] -> NHWC [3][2]
  const float x[6] = {0, 1, 2, 10, 11, 12};
  float y[6], back[6];
  reorder_ref_f32(x, y, d, 1);
  const float want[6] = {0, 10, 1, 11, 2, 12};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[i], want[i]);
  reorder_ref_f32(y, back, d, 0);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(back[i], x[i]);
}

TEST(Reorder, TiledMatchesTheReference) {
  ThreadPool pool = make_thread_pool(2);
  const int64_t shapes[][4] = {{1, 1, 5, 7},   {1, 3, 224, 224}, {2, 16, 4, 4},  {1, 17, 9, 13}, {3, 64, 1, 1},
                               {1, 256, 64, 64}, {2, 33, 31, 1},  {1, 130, 2, 33}, {1, 5, 0, 4}};
  for (const auto& d : shapes)
    for (int to : {0, 1})
      for (pthreadpool_t p : {static_cast<pthreadpool_t>(nullptr), pool.get()}) {
        check<float>(d, to, p);
        check<uint8_t>(d, to, p);
      }
}

}  // namespace
}  // namespace systolic::kernels
