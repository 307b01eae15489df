// fold_batchnorm: Conv + BatchNormalization becomes one Conv with the same results.
#include <gtest/gtest.h>

#include "tests/graph_builder.h"

namespace systolic::testing {

TEST(FoldBatchnorm, FoldsIntoConvAndKeepsResults) {
  GraphBuilder b;
  const int x = b.input("x", {1, 3, 9, 9});
  const int c = b.node(ir::Op::Conv, {x, b.weights("w", {5, 3, 3, 3}), b.weights("bias", {5})})[0];
  const int bn = b.node(ir::Op::BatchNormalization,
                        {c, b.positive("gamma", {5}), b.weights("beta", {5}), b.weights("mean", {5}),
                         b.positive("var", {5})})[0];
  b.output(bn);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::fold_batchnorm});
  EXPECT_EQ(count_ops(g, ir::Op::BatchNormalization), 0);
  EXPECT_EQ(count_ops(g, ir::Op::Conv), 1);
  EXPECT_LT(max_rel_error(run_graph(g, false), run_graph(b.g, false)), 1e-5);
}

TEST(FoldBatchnorm, LeavesSharedConvOutputAlone) {
  GraphBuilder b;
  const int x = b.input("x", {1, 3, 5, 5});
  const int c = b.node(ir::Op::Conv, {x, b.weights("w", {4, 3, 1, 1})})[0];
  const int bn = b.node(ir::Op::BatchNormalization,
                        {c, b.positive("g", {4}), b.weights("b", {4}), b.weights("m", {4}), b.positive("v", {4})})[0];
  const int y = b.node(ir::Op::Add, {bn, c})[0];  // the conv output is read twice
  b.output(y);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::fold_batchnorm});
  // Not folded into the conv (its output has two readers): a 1x1 depthwise conv of its own.
  EXPECT_EQ(count_ops(g, ir::Op::BatchNormalization), 0);
  EXPECT_EQ(count_ops(g, ir::Op::Conv), 2);
  EXPECT_EQ(g.nodes[0].inputs[1], b.g.nodes[0].inputs[1]);  // the first conv's weights untouched
  EXPECT_LT(max_rel_error(run_graph(g, false), run_graph(b.g, false)), 1e-5);
}

// DenseNet's pre-activation norm of a concatenation: nothing to fold into, so x * s + t per
// channel as a 1x1 depthwise conv, with the same results.
TEST(FoldBatchnorm, NormOfAConcatenationBecomesScaleAndShift) {
  GraphBuilder b;
  const int x1 = b.input("x1", {2, 3, 4, 5});
  const int x2 = b.input("x2", {2, 2, 4, 5});
  const int cat = b.node(ir::Op::Concat, {x1, x2})[0];
  b.last().set_i("axis", 1);
  const int bn = b.node(ir::Op::BatchNormalization,
                        {cat, b.weights("g", {5}), b.weights("b", {5}), b.weights("m", {5}), b.positive("v", {5})})[0];
  b.last().set_f("epsilon", 1e-3f);
  b.output(b.node(ir::Op::Relu, {bn})[0]);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::fold_batchnorm});
  EXPECT_EQ(count_ops(g, ir::Op::BatchNormalization), 0);
  EXPECT_EQ(count_ops(g, ir::Op::Conv), 1);
  EXPECT_LT(max_rel_error(run_graph(g, false), run_graph(b.g, false)), 1e-5);
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
}

// On other ranks (BatchNorm1d on [N, C, L]): a per-channel Mul and Add.
TEST(FoldBatchnorm, NormOf3dDataBecomesMulAndAdd) {
  GraphBuilder b;
  const int x = b.input("x", {2, 4, 6});
  const int bn = b.node(ir::Op::BatchNormalization,
                        {x, b.weights("g", {4}), b.weights("b", {4}), b.weights("m", {4}), b.positive("v", {4})})[0];
  b.output(bn);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::fold_batchnorm});
  EXPECT_EQ(count_ops(g, ir::Op::BatchNormalization), 0);
  EXPECT_EQ(count_ops(g, ir::Op::Mul), 1);
  EXPECT_EQ(count_ops(g, ir::Op::Add), 1);
  EXPECT_LT(max_rel_error(run_graph(g, false), run_graph(b.g, false)), 1e-5);
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
}

}  // namespace systolic::testing
