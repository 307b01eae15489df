// canonicalize_activations: x * HardSigmoid(x) with alpha 1/6, beta 1/2 becomes HardSwish (and
// then fuses into the conv); other HardSigmoid products are left alone. x * Sigmoid(x) becomes
// one Silu element-wise step, except where the sigmoid's output is quantized or observed.
#include <gtest/gtest.h>

#include "tests/graph_builder.h"

namespace systolic::testing {

TEST(CanonicalizeActivations, HardSwishFromHardSigmoidTimesX) {
  GraphBuilder b;
  const int x = b.input("x", {1, 4, 5, 5});
  const int c = b.node(ir::Op::Conv, {x, b.weights("w", {8, 4, 3, 3})})[0];
  const int hs = b.node(ir::Op::HardSigmoid, {c})[0];
  b.last().set_f("alpha", 1.f / 6.f);
  const int y = b.node(ir::Op::Mul, {c, hs})[0];
  const int other = b.node(ir::Op::HardSigmoid, {y})[0];  // default alpha 0.2: not a swish
  const int z = b.node(ir::Op::Mul, {other, y})[0];
  b.output(z);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::canonicalize_activations});
  EXPECT_EQ(count_ops(g, ir::Op::HardSwish), 1);
  EXPECT_EQ(count_ops(g, ir::Op::HardSigmoid), 1);
  run_passes(g, {passes::fuse_epilogue});
  EXPECT_EQ(count_ops(g, ir::Op::HardSwish), 0);  // folded into the conv
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
}

TEST(CanonicalizeActivations, SiluFromSigmoidTimesX) {
  GraphBuilder b;
  const int x = b.input("x", {2, 4, 5, 5});
  const int c = b.node(ir::Op::Conv, {x, b.weights("w", {8, 4, 3, 3})})[0];
  const int s = b.node(ir::Op::Sigmoid, {c})[0];
  const int y = b.node(ir::Op::Mul, {s, c})[0];  // either operand order
  const int c2 = b.node(ir::Op::Conv, {x, b.weights("w2", {8, 4, 3, 3})})[0];
  const int s2 = b.node(ir::Op::Sigmoid, {c2})[0];
  const int c3 = b.node(ir::Op::Conv, {x, b.weights("w3", {8, 4, 3, 3})})[0];
  const int z = b.node(ir::Op::Mul, {c3, s2})[0];  // a gate of another tensor: not a SiLU
  b.output(y);
  b.output(z);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::canonicalize_activations});
  EXPECT_EQ(count_ops(g, ir::Op::Silu), 1);
  EXPECT_EQ(count_ops(g, ir::Op::Sigmoid), 1);
  run_passes(g, {passes::fuse_epilogue});
  EXPECT_EQ(count_ops(g, ir::Op::Silu), 0);  // in the conv's epilogue (a vector exp in registers)
  int silu_convs = 0;
  for (const ir::Node& n : g.nodes) silu_convs += n.op == ir::Op::Conv && n.i("act", 0) == int64_t(kernels::Act::silu);
  EXPECT_EQ(silu_convs, 1);
  // In int8 plans SiLU stays a step (an int8 conv's float output would apply it per vector after
  // the store, with the scalar exp).
  ir::Graph i8 = b.g;
  passes::PassContext i8ctx;
  i8ctx.precision = passes::Precision::int8;
  for (auto pass : {passes::shape_inference, passes::canonicalize_activations, passes::fuse_epilogue})
    ASSERT_TRUE(pass(i8, i8ctx).ok());
  EXPECT_EQ(count_ops(i8, ir::Op::Silu), 1);
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);

  // A calibration plan (residuals unfused) observes the sigmoid's output: left as it is.
  ir::Graph kept = b.g;
  passes::PassContext ctx;
  ctx.fuse_residual = false;
  ASSERT_TRUE(passes::shape_inference(kept, ctx).ok());
  ASSERT_TRUE(passes::canonicalize_activations(kept, ctx).ok());
  EXPECT_EQ(count_ops(kept, ir::Op::Silu), 0);
  // A quantized sigmoid output (a QDQ model rounds it): left as it is.
  ir::Graph q = b.g;
  q.t(s).quant.scale = {1.f / 255.f};
  q.t(s).quant.zero_point = {0};
  run_passes(q, {passes::shape_inference, passes::canonicalize_activations});
  EXPECT_EQ(count_ops(q, ir::Op::Silu), 0);
}

}  // namespace systolic::testing
