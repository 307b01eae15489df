// layout_assignment: a conv/pool chain runs in NHWC with one reorder in and one out;
// a layout-bound op (Flatten) gets its plain input back.
#include <gtest/gtest.h>

#include "tests/graph_builder.h"

namespace systolic::testing {

TEST(LayoutAssignment, FewestReorders) {
  GraphBuilder b;
  const int x = b.input("x", {2, 3, 10, 10});
  const int c1 = b.node(ir::Op::Conv, {x, b.weights("w1", {16, 3, 3, 3})})[0];
  const int r = b.node(ir::Op::Relu, {c1})[0];
  const int c2 = b.node(ir::Op::Conv, {r, b.weights("w2", {16, 16, 3, 3})})[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  const int s = b.node(ir::Op::Add, {c2, r})[0];
  const int p = b.node(ir::Op::MaxPool, {s})[0];
  b.last().set_ints("kernel_shape", {2, 2});
  b.last().set_ints("strides", {2, 2});
  const int cat = b.node(ir::Op::Concat, {p, p})[0];
  b.last().set_i("axis", 1);
  const int f = b.node(ir::Op::Flatten, {cat})[0];
  b.output(f);
  b.output(p);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::layout_assignment});
  // In: x -> nhwc. Out: cat -> plain for Flatten, p -> plain as a graph output.
  EXPECT_EQ(count_ops(g, ir::Op::Reorder), 3);
  EXPECT_EQ(g.t(r).layout, ir::Layout::nhwc);
  EXPECT_EQ(g.t(p).layout, ir::Layout::plain);  // graph outputs are delivered plain
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
}

}  // namespace systolic::testing
