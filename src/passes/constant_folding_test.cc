// constant_folding: an exporter's shape sub-graph (Shape, Gather, Unsqueeze, Concat) folds
// into a constant and the Reshape it feeds keeps working.
#include <gtest/gtest.h>

#include "tests/graph_builder.h"

namespace systolic::testing {

TEST(ConstantFolding, FoldsShapeSubgraph) {
  GraphBuilder b;
  const int x = b.input("x", {2, 3, 4, 5});
  const int shape = b.node(ir::Op::Shape, {x})[0];
  const int idx = b.g.add_const_i64("idx", {}, {0});
  const int n = b.node(ir::Op::Gather, {shape, idx})[0];
  const int axes = b.g.add_const_i64("axes", {1}, {0});
  const int n1 = b.node(ir::Op::Unsqueeze, {n, axes})[0];
  const int minus1 = b.g.add_const_i64("m1", {1}, {-1});
  const int target = b.node(ir::Op::Concat, {n1, minus1})[0];
  b.last().set_i("axis", 0);
  const int y = b.node(ir::Op::Reshape, {x, target})[0];
  b.output(y);
  ir::Graph g = b.g;
  run_passes(g, {passes::constant_folding, passes::shape_inference, passes::dead_code_elimination});
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op, ir::Op::Reshape);
  EXPECT_TRUE(g.t(g.nodes[0].inputs[1]).is_const());
  EXPECT_EQ(g.t(y).shape, (ir::Shape{2, 60}));
  EXPECT_EQ(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 0.0);
}

TEST(ConstantFolding, EvaluatesArithmeticOnConstants) {
  GraphBuilder b;
  const int x = b.input("x", {4});
  const int c1 = b.g.add_const_f32("c1", {4}, {1, 2, 3, 4});
  const int c2 = b.g.add_const_f32("c2", {4}, {10, 20, 30, 40});
  const int s = b.node(ir::Op::Mul, {c1, c2})[0];
  const int y = b.node(ir::Op::Add, {x, s})[0];
  b.output(y);
  ir::Graph g = b.g;
  run_passes(g, {passes::constant_folding});
  ASSERT_EQ(g.nodes.size(), 1u);
  const ir::Tensor& folded = g.t(g.nodes[0].inputs[1]);
  ASSERT_TRUE(folded.is_const());
  EXPECT_EQ(folded.as<float>()[3], 160.f);
}

}  // namespace systolic::testing
