// fuse_channel_shuffle: ShuffleNet's Reshape / Transpose / Reshape becomes one ChannelShuffle that
// follows the convs' NHWC layout, with the same results in both layouts; other transposes of a
// 5-D view are left alone.
#include <gtest/gtest.h>

#include <map>

#include "tests/graph_builder.h"

namespace systolic::testing {
namespace {

// conv -> Reshape [N,g,C/g,H,W] -> Transpose perm -> Reshape [N,C,H,W] -> conv.
GraphBuilder shuffle_graph(int64_t n, int64_t groups, std::vector<int64_t> perm) {
  GraphBuilder b;
  const int64_t c = 12, h = 5, w = 7;
  const int x = b.input("x", {n, 3, h, w});
  const int c1 = b.node(ir::Op::Conv, {x, b.weights("w1", {c, 3, 1, 1})})[0];
  const int r1 = b.node(ir::Op::Reshape, {c1, b.g.add_const_i64("s5", {5}, {n, groups, c / groups, h, w})})[0];
  const int t = b.node(ir::Op::Transpose, {r1})[0];
  b.last().set_ints("perm", perm);
  const int r2 = b.node(ir::Op::Reshape, {t, b.g.add_const_i64("s4", {4}, {n, c, h, w})})[0];
  b.output(b.node(ir::Op::Conv, {r2, b.weights("w2", {4, c, 1, 1})}, 1, "c2")[0]);
  return b;
}

}  // namespace

TEST(FuseChannelShuffle, ReshapeTransposeReshapeIsOneNhwcShuffle) {
  for (int64_t n : {1, 2})
    for (int64_t groups : {2, 3}) {
      GraphBuilder b = shuffle_graph(n, groups, {0, 2, 1, 3, 4});
      ir::Graph g = b.g;
      run_passes(g, {passes::shape_inference, passes::fuse_channel_shuffle});
      EXPECT_EQ(count_ops(g, ir::Op::ChannelShuffle), 1);
      EXPECT_EQ(count_ops(g, ir::Op::Transpose), 0);
      EXPECT_LT(max_rel_error(run_graph(g, false), run_graph(b.g, false)), 1e-6);  // plain
      EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);  // NHWC, kernels
      auto prog = plan::compile(b.g, plan::CompileOptions{});
      ASSERT_TRUE(prog.ok()) << prog.status().message();
      int reorders = 0;
      for (const ir::Node& node : (*prog)->graph.nodes) {
        reorders += node.op == ir::Op::Reorder;
        if (node.op == ir::Op::ChannelShuffle) {
          EXPECT_EQ((*prog)->graph.t(node.outputs[0]).layout, ir::Layout::nhwc);
        }
      }
      EXPECT_EQ(reorders, 2);  // the input and the output only
    }
}

// ShuffleNet's block: cat(x1, branch(x2)) then the shuffle. The shuffle takes the Concat's
// inputs and interleaves them in one copy.
TEST(FuseChannelShuffle, AbsorbsTheConcatBeforeIt) {
  for (int64_t n : {1, 3}) {
    GraphBuilder b;
    const int64_t half = 6, h = 4, w = 5;
    const int x = b.input("x", {n, 3, h, w});
    const int a = b.node(ir::Op::Conv, {x, b.weights("wa", {half, 3, 1, 1})})[0];
    const int br = b.node(ir::Op::Conv, {x, b.weights("wb", {half, 3, 1, 1})})[0];
    const int cat = b.node(ir::Op::Concat, {a, br})[0];
    b.last().set_i("axis", 1);
    const int r1 = b.node(ir::Op::Reshape, {cat, b.g.add_const_i64("s5", {5}, {n, 2, half, h, w})})[0];
    const int t = b.node(ir::Op::Transpose, {r1})[0];
    b.last().set_ints("perm", {0, 2, 1, 3, 4});
    const int r2 = b.node(ir::Op::Reshape, {t, b.g.add_const_i64("s4", {4}, {n, 2 * half, h, w})})[0];
    b.output(b.node(ir::Op::Conv, {r2, b.weights("w2", {4, 2 * half, 1, 1})})[0]);
    ir::Graph g = b.g;
    run_passes(g, {passes::shape_inference, passes::fuse_channel_shuffle});
    EXPECT_EQ(count_ops(g, ir::Op::Concat), 0);
    ASSERT_EQ(count_ops(g, ir::Op::ChannelShuffle), 1);
    for (const ir::Node& node : g.nodes) {
      if (node.op == ir::Op::ChannelShuffle) {
        EXPECT_EQ(node.inputs, std::vector<int>({a, br}));
      }
    }
    EXPECT_LT(max_rel_error(run_graph(g, false), run_graph(b.g, false)), 1e-6);  // interpreter, plain
    EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);  // NHWC, kernels
  }
}

TEST(FuseChannelShuffle, OtherPermutationsStay) {
  GraphBuilder b = shuffle_graph(1, 2, {0, 1, 2, 4, 3});
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::fuse_channel_shuffle});
  EXPECT_EQ(count_ops(g, ir::Op::ChannelShuffle), 0);
  EXPECT_EQ(count_ops(g, ir::Op::Transpose), 1);
}

}  // namespace systolic::testing
