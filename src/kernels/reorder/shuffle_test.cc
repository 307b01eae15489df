// The parallel channel shuffle against the reference, for equality (floats, bytes, inner runs
// of several elements; 2, 3 and 4 groups; the groups as slices of one tensor or as separate
// sources; with and without a pool), and the reference against the permutation written out
// by hand.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "base/threadpool.h"
#include "kernels/reorder/shuffle.h"

namespace systolic::kernels {
namespace {

TEST(ShuffleChannels, ReferenceInterleavesTheGroups) {
  // One row, 2 groups of 3 channels: 0 1 2 | 3 4 5 -> 0 3 1 4 2 5.
  const float x[6] = {0, 1, 2, 3, 4, 5};
  const void* srcs[2] = {x, x + 3};
  float y[6] = {};
  shuffle_channels_ref({.rows = 1, .groups = 2, .cg = 3, .inner = 1, .elem = 4, .src_stride = 24}, srcs, y);
  const float want[6] = {0, 3, 1, 4, 2, 5};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[i], want[i]);
}

TEST(ShuffleChannels, ParallelEqualsReference) {
  ThreadPool pool = make_thread_pool(2);
  for (int64_t elem : {int64_t(4), int64_t(2), int64_t(1)})
    for (int64_t inner : {int64_t(1), int64_t(5), int64_t(49)})
      for (int64_t groups : {int64_t(2), int64_t(3), int64_t(4)})
        for (int64_t rows : {int64_t(1), int64_t(3), int64_t(784)})
          for (bool separate : {false, true}) {
            const int64_t cg = 58, group_bytes = cg * inner * elem;
            ShuffleParams p{.rows = rows, .groups = groups, .cg = cg, .inner = inner, .elem = elem};
            std::vector<uint8_t> x(std::size_t(rows * groups * group_bytes));
            for (std::size_t i = 0; i < x.size(); ++i) x[i] = uint8_t(i * 7 + i / 251);
            std::vector<const void*> srcs;
            for (int64_t i = 0; i < groups; ++i)  // separate: source i is rows of its own
              srcs.push_back(x.data() + (separate ? i * rows * group_bytes : i * group_bytes));
            p.src_stride = separate ? group_bytes : groups * group_bytes;
            std::vector<uint8_t> want(x.size(), 0), got(x.size(), 1), got1(x.size(), 2);
            shuffle_channels_ref(p, srcs.data(), want.data());
            shuffle_channels(p, srcs.data(), got.data(), pool.get());
            shuffle_channels(p, srcs.data(), got1.data(), nullptr);
            EXPECT_EQ(got, want) << elem << " " << inner << " " << groups << " " << rows << " " << separate;
            EXPECT_EQ(got1, want) << elem << " " << inner << " " << groups << " " << rows << " " << separate;
            EXPECT_NE(want, x);  // a shuffle moves something
          }
}

}  // namespace
}  // namespace systolic::kernels
