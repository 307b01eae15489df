// fuse_epilogue: Conv -> Add(residual) -> Relu and Conv -> Clip become single convs with a
// fused epilogue, with unchanged results.
#include <gtest/gtest.h>

#include "kernels/epilogue.h"
#include "tests/graph_builder.h"

namespace systolic::testing {

TEST(FuseEpilogue, ResidualAddAndActivation) {
  GraphBuilder b;
  const int x = b.input("x", {1, 8, 6, 6});
  const int c1 = b.node(ir::Op::Conv, {x, b.weights("w1", {8, 8, 3, 3})})[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  const int r1 = b.node(ir::Op::Relu, {c1})[0];
  const int c2 = b.node(ir::Op::Conv, {r1, b.weights("w2", {8, 8, 1, 1}), b.weights("b2", {8})})[0];
  const int add = b.node(ir::Op::Add, {c2, x})[0];
  const int lo = b.g.add_const_f32("lo", {}, {0.f});
  const int hi = b.g.add_const_f32("hi", {}, {6.f});
  const int y = b.node(ir::Op::Clip, {add, lo, hi})[0];
  b.output(y);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::fuse_epilogue});
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].i("act", 0), static_cast<int64_t>(kernels::Act::relu));
  EXPECT_EQ(g.nodes[1].in(3), x);
  EXPECT_EQ(g.nodes[1].i("act", 0), static_cast<int64_t>(kernels::Act::clip));
  EXPECT_EQ(g.nodes[1].f("act_b", 0), 6.f);
  EXPECT_LT(max_rel_error(run_graph(g, false), run_graph(b.g, false)), 1e-5);
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
}

TEST(FuseEpilogue, ActivationBeforeAddIsNotReordered) {
  GraphBuilder b;
  const int x = b.input("x", {1, 4, 5, 5});
  const int c = b.node(ir::Op::Conv, {x, b.weights("w", {4, 4, 1, 1})})[0];
  const int r = b.node(ir::Op::Relu, {c})[0];
  const int y = b.node(ir::Op::Add, {r, x})[0];
  b.output(y);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::fuse_epilogue});
  EXPECT_EQ(count_ops(g, ir::Op::Add), 1);  // relu(conv) + x is not act(conv + x)
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
}

}  // namespace systolic::testing
