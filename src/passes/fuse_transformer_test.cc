// fuse_layernorm and fuse_gelu: the exporters' decomposed LayerNorm and Erf GELU become one node
// each (GELU then in the producing conv's epilogue, through a Reshape); near-misses are left
// alone; the optimized plan agrees with the reference executor.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/graph_builder.h"

namespace systolic::testing {
namespace {

int scalar(GraphBuilder& b, const std::string& name, float v) { return b.g.add_const_f32(name, {}, {v}); }

// y = LayerNorm over the last axis of x as PyTorch's opset-13 export writes it.
int decomposed_layernorm(GraphBuilder& b, int x, int64_t C, float pow_exponent = 2.f) {
  const int mean = b.node(ir::Op::ReduceMean, {x})[0];
  b.last().set_ints("axes", {-1});
  const int d = b.node(ir::Op::Sub, {x, mean})[0];
  const int p = b.node(ir::Op::Pow, {d, scalar(b, "two" + std::to_string(x), pow_exponent)})[0];
  const int var = b.node(ir::Op::ReduceMean, {p})[0];
  b.last().set_ints("axes", {-1});
  const int ve = b.node(ir::Op::Add, {var, scalar(b, "eps" + std::to_string(x), 1e-5f)})[0];
  const int s = b.node(ir::Op::Sqrt, {ve})[0];
  const int n = b.node(ir::Op::Div, {d, s})[0];
  const int y = b.node(ir::Op::Mul, {n, b.weights("gamma" + std::to_string(x), {C})})[0];
  return b.node(ir::Op::Add, {y, b.weights("beta" + std::to_string(x), {C})})[0];
}

// GELU as x * (1 + erf(x / sqrt 2)) * 0.5.
int decomposed_gelu(GraphBuilder& b, int x, float root2 = std::sqrt(2.f)) {
  const int d = b.node(ir::Op::Div, {x, scalar(b, "root2" + std::to_string(x), root2)})[0];
  const int e = b.node(ir::Op::Erf, {d})[0];
  const int a = b.node(ir::Op::Add, {e, scalar(b, "one" + std::to_string(x), 1.f)})[0];
  const int m = b.node(ir::Op::Mul, {x, a})[0];
  return b.node(ir::Op::Mul, {m, scalar(b, "half" + std::to_string(x), 0.5f)})[0];
}

}  // namespace

TEST(FuseLayerNorm, NineNodesBecomeOne) {
  GraphBuilder b;
  const int x = b.input("x", {1, 7, 48});
  b.output(decomposed_layernorm(b, x, 48));
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::fuse_layernorm});
  EXPECT_EQ(count_ops(g, ir::Op::LayerNormalization), 1);
  EXPECT_EQ(g.nodes.size(), 1u);
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
}

TEST(FuseLayerNorm, OtherExponentsAreLeftAlone) {
  GraphBuilder b;
  const int x = b.input("x", {2, 5, 16});
  b.output(decomposed_layernorm(b, x, 16, 3.f));
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::fuse_layernorm});
  EXPECT_EQ(count_ops(g, ir::Op::LayerNormalization), 0);
}

TEST(FuseGelu, ErfFormFusesIntoTheLinearLayersConv) {
  // [1, 9, 32] x [32, 64] + bias -> GELU: MatMul becomes a conv with the bias, GELU its epilogue.
  GraphBuilder b;
  const int x = b.input("x", {1, 9, 32});
  const int mm = b.node(ir::Op::MatMul, {x, b.weights("w", {32, 64})})[0];
  const int biased = b.node(ir::Op::Add, {mm, b.weights("bias", {64})})[0];
  b.output(decomposed_gelu(b, biased));
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::gemm_to_conv, passes::fuse_gelu});
  EXPECT_EQ(count_ops(g, ir::Op::Gelu), 1);
  EXPECT_EQ(count_ops(g, ir::Op::Erf), 0);
  EXPECT_EQ(count_ops(g, ir::Op::Add), 0);  // the bias is the conv's
  run_passes(g, {passes::shape_inference, passes::fuse_epilogue});
  EXPECT_EQ(count_ops(g, ir::Op::Gelu), 0);  // in the conv's epilogue
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
}

TEST(FuseGelu, WrongConstantsAreLeftAlone) {
  GraphBuilder b;
  const int x = b.input("x", {4, 10});
  b.output(decomposed_gelu(b, x, 1.5f));
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::fuse_gelu});
  EXPECT_EQ(count_ops(g, ir::Op::Gelu), 0);
  EXPECT_EQ(count_ops(g, ir::Op::Erf), 1);
}

TEST(FuseGelu, StandaloneGeluRunsOnTheVectorKernel) {
  GraphBuilder b;
  const int x = b.input("x", {3, 100});
  b.output(decomposed_gelu(b, x));
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::fuse_gelu});
  EXPECT_EQ(count_ops(g, ir::Op::Gelu), 1);
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
}

}  // namespace systolic::testing
