// dead_code_elimination: unread branches go, Identity/Dropout are bypassed, but a no-op
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

}  // namespace systolic::testing
