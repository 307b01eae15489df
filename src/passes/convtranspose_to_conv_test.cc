// convtranspose_to_conv: a ConvTranspose with kernel == stride becomes a 1x1 conv and a
// DepthToSpace (a following BatchNormalization folded in); overlapping ones are left alone.
#include <gtest/gtest.h>

#include "tests/graph_builder.h"

namespace systolic::testing {

TEST(ConvTransposeToConv, KernelEqualsStrideBecomesConvAndDepthToSpace) {
  GraphBuilder b;
  const int x = b.input("x", {2, 3, 5, 6});
  const int ct = b.node(ir::Op::ConvTranspose, {x, b.weights("w", {3, 4, 2, 2}), b.weights("bias", {4})})[0];
  b.last().set_ints("strides", {2, 2});
  const int bn = b.node(ir::Op::BatchNormalization, {ct, b.positive("s", {4}), b.weights("bb", {4}), b.weights("m", {4}),
                                                     b.positive("v", {4})})[0];
  b.output(b.node(ir::Op::Relu, {bn})[0]);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::convtranspose_to_conv});
  EXPECT_EQ(count_ops(g, ir::Op::ConvTranspose), 0);
  EXPECT_EQ(count_ops(g, ir::Op::BatchNormalization), 0);
  EXPECT_EQ(count_ops(g, ir::Op::Conv), 1);
  EXPECT_EQ(count_ops(g, ir::Op::DepthToSpace), 1);
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
}

TEST(ConvTransposeToConv, OverlappingKernelsAreLeftAlone) {
  GraphBuilder b;
  const int x = b.input("x", {1, 3, 5, 6});
  const int ct = b.node(ir::Op::ConvTranspose, {x, b.weights("w", {3, 4, 3, 3})})[0];
  b.last().set_ints("strides", {2, 2});
  b.output(ct);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::convtranspose_to_conv});
  EXPECT_EQ(count_ops(g, ir::Op::ConvTranspose), 1);
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
}

TEST(ConvTransposeToConv, ABiasThatIsNotFloat32IsNotReadAsFloats) {
  GraphBuilder b;
  const int x = b.input("x", {1, 3, 4, 4});
  const int bias = b.weights("bias", {4});
  b.g.t(bias).dtype = ir::DType::i16;  // 4 int16 values: half the bytes of 4 floats
  const int ct = b.node(ir::Op::ConvTranspose, {x, b.weights("w", {3, 4, 2, 2}), bias})[0];
  b.last().set_ints("strides", {2, 2});
  b.output(ct);
  ir::Graph g = b.g;
  run_passes(g, {passes::convtranspose_to_conv});
  EXPECT_EQ(count_ops(g, ir::Op::ConvTranspose), 1);
}

}  // namespace systolic::testing
