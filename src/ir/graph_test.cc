// Element counts of hostile shapes: checked_num_elements refuses, num_elements never overflows.
#include <gtest/gtest.h>

#include "ir/graph.h"

namespace systolic::ir {

TEST(Shapes, CheckedElementCount) {
  EXPECT_EQ(checked_num_elements({}), 1);
  EXPECT_EQ(checked_num_elements({2, 3, 4}), 24);
  EXPECT_EQ(checked_num_elements({0, 5}), 0);
  EXPECT_EQ(checked_num_elements({int64_t{1} << 20, int64_t{1} << 15, 0}), 0);
  EXPECT_EQ(checked_num_elements({int64_t{1} << 35, int64_t{1} << 35, 0}), -1);  // outer extents would overflow
  EXPECT_EQ(checked_num_elements({kMaxElements}), kMaxElements);
  EXPECT_EQ(checked_num_elements({kMaxElements + 1}), -1);
  EXPECT_EQ(checked_num_elements({1000000, 1000000}), -1);  // 10^12
  EXPECT_EQ(checked_num_elements({int64_t{1} << 32, int64_t{1} << 32, int64_t{1} << 32}), -1);  // wraps int64
  EXPECT_EQ(checked_num_elements({3, -1}), -1);
}

TEST(Shapes, ElementCountSaturates) {
  EXPECT_EQ(num_elements({2, 3, 4}), 24);
  EXPECT_EQ(num_elements({int64_t{1} << 35, int64_t{1} << 35, 0}), 0);
  EXPECT_EQ(num_elements({int64_t{1} << 40, int64_t{1} << 40}), INT64_MAX);
}

}  // namespace systolic::ir
