// gemm_to_conv: Gemm/MatMul with constant weights run as 1x1 convs with the same results.
#include <gtest/gtest.h>

#include "tests/graph_builder.h"

namespace systolic::testing {

TEST(GemmToConv, GemmTransBAndMatMul) {
  GraphBuilder b;
  const int x = b.input("x", {3, 17});
  const int g1 = b.node(ir::Op::Gemm, {x, b.weights("w", {10, 17}), b.weights("c", {10})})[0];
  b.last().set_i("transB", 1);
  const int y = b.node(ir::Op::MatMul, {g1, b.weights("w2", {10, 7})})[0];
  b.output(y);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::gemm_to_conv});
  EXPECT_EQ(count_ops(g, ir::Op::Gemm), 0);
  EXPECT_EQ(count_ops(g, ir::Op::MatMul), 0);
  EXPECT_EQ(count_ops(g, ir::Op::Conv), 2);
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
}

TEST(GemmToConv, KeepsGemmItCannotMap) {
  GraphBuilder b;
  const int x = b.input("x", {17, 3});
  const int y = b.node(ir::Op::Gemm, {x, b.weights("w", {17, 5})})[0];
  b.last().set_i("transA", 1);
  b.last().set_f("alpha", 0.5f);
  b.output(y);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::gemm_to_conv});
  EXPECT_EQ(count_ops(g, ir::Op::Gemm), 1);
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
}

}  // namespace systolic::testing
