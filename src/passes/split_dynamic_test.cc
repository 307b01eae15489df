// split_dynamic: which nodes are shaped at run time, and the two graphs it leaves.
#include <gtest/gtest.h>

#include "tests/graph_builder.h"

namespace systolic::testing {

TEST(SplitDynamic, ValuesThatShapeAnOutputMakeItDynamic) {
  GraphBuilder b;
  const int x = b.input("x", {2, 6});
  const int shape_in = b.input("shape", {2}, ir::DType::i64);
  const int fixed = b.node(ir::Op::Reshape, {x, b.g.add_const_i64("s", {2}, {3, 4})})[0];
  const int computed = b.node(ir::Op::Reshape, {x, shape_in})[0];  // its shape is run-time data
  const int after = b.node(ir::Op::Relu, {computed})[0];           // downstream of it
  const int elementwise = b.node(ir::Op::Relu, {fixed})[0];        // a run-time input, but static shape
  for (int o : {after, elementwise}) b.output(o);
  ir::Graph& g = b.g;
  EXPECT_FALSE(passes::dynamic_node(g, g.nodes[0]));
  EXPECT_TRUE(passes::dynamic_node(g, g.nodes[1]));
  passes::mark_dynamic(g, g.nodes[1]);
  EXPECT_TRUE(passes::dynamic_node(g, g.nodes[2]));
  EXPECT_FALSE(passes::dynamic_node(g, g.nodes[3]));

  passes::PassContext ctx;
  ASSERT_TRUE(passes::shape_inference(g, ctx).ok());
  ASSERT_TRUE(passes::split_dynamic(g, ctx).ok());
  ASSERT_TRUE(ctx.tail);
  ASSERT_EQ(ctx.tail->nodes.size(), 2u);  // the computed Reshape and the Relu after it
  EXPECT_EQ(ctx.tail->nodes[0].op, ir::Op::Reshape);
  ASSERT_EQ(g.nodes.size(), 2u);          // the fixed Reshape and its Relu stay static
  // The tail reads x and shape (model inputs) and the static Relu's output, and gives both of
  // the model's outputs in their order; the static graph outputs what the tail reads of it.
  std::vector<std::string> tail_in, tail_out, static_out;
  for (int id : ctx.tail->inputs) tail_in.push_back(ctx.tail->t(id).name);
  for (int id : ctx.tail->outputs) tail_out.push_back(ctx.tail->t(id).name);
  for (int id : g.outputs) static_out.push_back(g.t(id).name);
  EXPECT_EQ(tail_out, (std::vector<std::string>{g.t(after).name, g.t(elementwise).name}));
  EXPECT_EQ(static_out, (std::vector<std::string>{g.t(elementwise).name}));
  EXPECT_EQ(tail_in.size(), 3u);
}

TEST(SplitDynamic, IfIsAlwaysDynamicAndAStaticModelHasNoTail) {
  GraphBuilder b;
  const int c = b.input("c", {}, ir::DType::boolean);
  b.node(ir::Op::If, {c});
  EXPECT_TRUE(passes::dynamic_node(b.g, b.g.nodes[0]));

  GraphBuilder s;
  const int x = s.input("x", {1, 4});
  s.output(s.node(ir::Op::Relu, {x})[0]);
  passes::PassContext ctx;
  ASSERT_TRUE(passes::shape_inference(s.g, ctx).ok());
  ASSERT_TRUE(passes::split_dynamic(s.g, ctx).ok());
  EXPECT_FALSE(ctx.tail);
  EXPECT_EQ(s.g.nodes.size(), 1u);
}

}  // namespace systolic::testing
