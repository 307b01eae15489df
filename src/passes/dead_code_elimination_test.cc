// dead_code_elimination: unread branches go, Identity/Dropout/zero Pads are bypassed, but a no-op
// that produces a graph output stays so the output keeps its name.
#include <gtest/gtest.h>

#include "tests/graph_builder.h"

namespace systolic::testing {

TEST(DeadCodeElimination, RemovesUnusedAndNoops) {
  GraphBuilder b;
  const int x = b.input("x", {1, 4});
  const int dead = b.node(ir::Op::Relu, {x})[0];
  (void)dead;
  const int id = b.node(ir::Op::Identity, {x})[0];
  const int drop = b.node(ir::Op::Dropout, {id})[0];
  const int y = b.node(ir::Op::Sigmoid, {drop})[0];
  const int out = b.node(ir::Op::Identity, {y})[0];
  b.output(out);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::dead_code_elimination});
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op, ir::Op::Sigmoid);
  EXPECT_EQ(g.nodes[0].inputs[0], x);
  EXPECT_EQ(g.nodes[1].op, ir::Op::Identity);
  EXPECT_EQ(g.nodes[1].outputs[0], out);
}

// A Pad of zeros (DenseNet's average pools, as PyTorch exports them) is bypassed; one that pads
// is not.
TEST(DeadCodeElimination, ZeroPadIsANoop) {
  GraphBuilder b;
  const int x = b.input("x", {1, 2, 4, 4});
  const int zeros = b.g.add_const_i64("zeros", {8}, {0, 0, 0, 0, 0, 0, 0, 0});
  const int ones = b.g.add_const_i64("ones", {8}, {0, 0, 1, 1, 0, 0, 1, 1});
  const int p0 = b.node(ir::Op::Pad, {x, zeros})[0];
  const int p1 = b.node(ir::Op::Pad, {b.node(ir::Op::Relu, {p0})[0], ones})[0];
  b.output(b.node(ir::Op::Sigmoid, {p1})[0]);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::dead_code_elimination});
  EXPECT_EQ(count_ops(g, ir::Op::Pad), 1);
  EXPECT_EQ(g.nodes[0].op, ir::Op::Relu);
  EXPECT_EQ(g.nodes[0].inputs[0], x);
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-6);
}

}  // namespace systolic::testing
