// canonicalize_activations: x * HardSigmoid(x) with alpha 1/6, beta 1/2 becomes HardSwish (and
// then fuses into the conv); other HardSigmoid products are left alone.
#include <gtest/gtest.h>

#include "tests/graph_builder.h"

namespace systolic::testing {

TEST(CanonicalizeActivations, HardSwishFromHardSigmoidTimesX) {
  GraphBuilder b;
  const int x = b.input("x", {1, 4, 5, 5});
  const int c = b.node(ir::Op::Conv, {x, b.weights("w", {8, 4, 3, 3})})[0];
  const int hs = b.node(ir::Op::HardSigmoid, {c})[0];
  b.last().set_f("alpha", 1.f / 6.f);
  const int y = b.node(ir::Op::Mul, {c, hs})[0];
  const int other = b.node(ir::Op::HardSigmoid, {y})[0];  // default alpha 0.2: not a swish
  const int z = b.node(ir::Op::Mul, {other, y})[0];
  b.output(z);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::canonicalize_activations});
  EXPECT_EQ(count_ops(g, ir::Op::HardSwish), 1);
  EXPECT_EQ(count_ops(g, ir::Op::HardSigmoid), 1);
  run_passes(g, {passes::fuse_epilogue});
  EXPECT_EQ(count_ops(g, ir::Op::HardSwish), 0);  // folded into the conv
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
}

}  // namespace systolic::testing
