// prune_conv_taps: taps that read only padding are cut (a 3x3 conv dilated past the image is a
// 1x1 conv); convs whose every tap can read the image are left alone; the output is unchanged.
#include <gtest/gtest.h>

#include "tests/graph_builder.h"

namespace systolic::testing {

TEST(PruneConvTaps, DilationPastTheImageLeavesTheCentreTap) {
  GraphBuilder b;
  const int x = b.input("x", {1, 6, 9, 9});
  const int far = b.node(ir::Op::Conv, {x, b.weights("w", {4, 6, 3, 3})})[0];
  b.last().set_ints("dilations", {12, 12});
  b.last().set_ints("pads", {12, 12, 12, 12});
  const int near = b.node(ir::Op::Conv, {x, b.weights("w2", {4, 6, 3, 3})})[0];
  b.last().set_ints("dilations", {2, 2});
  b.last().set_ints("pads", {2, 2, 2, 2});
  b.output(b.node(ir::Op::Add, {far, near})[0]);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::prune_conv_taps, passes::shape_inference});
  EXPECT_EQ(g.t(g.nodes[0].inputs[1]).shape, (ir::Shape{4, 6, 1, 1}));
  EXPECT_EQ(g.nodes[0].ints("pads"), (std::vector<int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(g.t(g.nodes[1].inputs[1]).shape, (ir::Shape{4, 6, 3, 3}));
  EXPECT_EQ(g.t(far).shape, (ir::Shape{1, 4, 9, 9}));
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
}

TEST(PruneConvTaps, OneSidedPaddingRowsGo) {
  // Pads of 3 on top with a 5-row kernel on 2 rows of output: the first rows of taps read padding only.
  GraphBuilder b;
  const int x = b.input("x", {1, 2, 4, 5});
  b.output(b.node(ir::Op::Conv, {x, b.weights("w", {3, 2, 5, 3})})[0]);
  b.last().set_ints("pads", {4, 1, 0, 1});
  b.last().set_ints("strides", {3, 1});
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::prune_conv_taps, passes::shape_inference});
  EXPECT_LT(g.t(g.nodes[0].inputs[1]).shape[2], 5);
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
}

}  // namespace systolic::testing
