// The parallel channel shuffle against the reference, for equality (floats, bytes, inner runs
// of several elements; 2, 3 and 4 groups; with and without a pool), and the reference against
// the permutation written out by hand.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "base/threadpool.h"
#include "kernels/reorder/shuffle.h"

namespace systolic::kernels {
namespace {

TEST(ShuffleChannels, ReferenceInterleavesTheGroups) {
  // One row, 2 groups of 3 channels: 0 1 2 | 3 4 5 -> 0 3 1 4 2 5.
  const float x[6] = {0, 1, 2, 3, 4, 5};
  float y[6] = {};
  shuffle_channels_ref({.rows = 1, .groups = 2, .cg = 3, .inner = 1, .elem = 4}, x, y);
  const float want[6] = {0, 3, 1, 4, 2, 5};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[i], want[i]);
}

TEST(ShuffleChannels, ParallelEqualsReference) {
  ThreadPool pool = make_thread_pool(2);
  for (int64_t elem : {int64_t(4), int64_t(1)})
    for (int64_t inner : {int64_t(1), int64_t(5), int64_t(49)})
      for (int64_t groups : {int64_t(2), int64_t(3), int64_t(4)})
        for (int64_t rows : {int64_t(1), int64_t(3), int64_t(784)}) {
          const ShuffleParams p{.rows = rows, .groups = groups, .cg = 58, .inner = inner, .elem = elem};
          std::vector<uint8_t> x(std::size_t(rows * groups * p.cg * inner * elem));
          for (std::size_t i = 0; i < x.size(); ++i) x[i] = uint8_t(i * 7 + i / 251);
          std::vector<uint8_t> want(x.size(), 0), got(x.size(), 1), got1(x.size(), 2);
          shuffle_channels_ref(p, x.data(), want.data());
          shuffle_channels(p, x.data(), got.data(), pool.get());
          shuffle_channels(p, x.data(), got1.data(), nullptr);
          EXPECT_EQ(got, want) << elem << " " << inner << " " << groups << " " << rows;
          EXPECT_EQ(got1, want) << elem << " " << inner << " " << groups << " " << rows;
          EXPECT_NE(want, x);  // a shuffle moves something
        }
}

}  // namespace
}  // namespace systolic::kernels
