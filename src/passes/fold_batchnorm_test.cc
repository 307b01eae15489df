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
  run_passes(b.g, {passes::shape_inference, passes::fold_batchnorm});
  EXPECT_EQ(count_ops(b.g, ir::Op::BatchNormalization), 1);
}

}  // namespace systolic::testing
