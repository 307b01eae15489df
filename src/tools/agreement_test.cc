// Agreement on hand-computed rows: cosine over everything, max error, top-1 and top-5 overlap.
#include "tools/agreement.h"

#include <gtest/gtest.h>

#include <cmath>

namespace systolic::tools {
namespace {

TEST(Agreement, IdenticalRowsAgreeFully) {
  const float a[2 * 6] = {1, 2, 3, 4, 5, 6, -1, 0, 7, 2, 2, 1};
  Agreement g;
  g.add(a, a, 2, 6);
  EXPECT_DOUBLE_EQ(g.cosine(), 1.0);
  EXPECT_EQ(g.max_abs_error(), 0.0);
  EXPECT_EQ(g.top1(), 1.0);
  EXPECT_EQ(g.top5(), 1.0);
  EXPECT_EQ(g.rows(), 2);
}

TEST(Agreement, HandComputed) {
  // Row 0: argmax moves from 5 to 4; the top 5 {5,4,3,2,1} becomes {4,5,3,2,0}: 4 in common.
  // Row 1: the same argmax (2); top 5 {2,3,4,5,1} vs {2,3,4,1,0}: 4 in common.
  const float ref[2 * 6] = {0, 1, 2, 3, 4, 5, -1, 0.5f, 7, 2, 2, 1};
  const float got[2 * 6] = {1.5f, 1, 2, 3, 6, 5, 0.25f, 0.5f, 7, 2, 2, 0};
  Agreement g;
  g.add(ref, got, 1, 6);
  g.add(ref + 6, got + 6, 1, 6);
  double dot = 0, r2 = 0, g2 = 0;
  for (int i = 0; i < 12; ++i) dot += double(ref[i]) * got[i], r2 += double(ref[i]) * ref[i], g2 += double(got[i]) * got[i];
  EXPECT_NEAR(g.cosine(), dot / std::sqrt(r2 * g2), 1e-12);
  EXPECT_DOUBLE_EQ(g.max_abs_error(), 2.0);
  EXPECT_DOUBLE_EQ(g.top1(), 0.5);
  EXPECT_DOUBLE_EQ(g.top5(), 0.8);
}

TEST(Agreement, ShortRowsAndZeros) {
  const float ref[3] = {0, 0, 0}, got[3] = {0, 1, 0};
  Agreement g;
  g.add(ref, ref, 1, 3);
  EXPECT_EQ(g.cosine(), 1.0);  // both all zeros
  EXPECT_EQ(g.top5(), 1.0);    // k = 3 for a row of 3
  Agreement h;
  h.add(ref, got, 1, 3);
  EXPECT_EQ(h.cosine(), 0.0);
  EXPECT_EQ(h.top1(), 0.0);    // ties: the first index, 0 against 1
  EXPECT_EQ(h.top5(), 1.0);
}

}  // namespace
}  // namespace systolic::tools
