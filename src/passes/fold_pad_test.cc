// Pad folding: a constant-zero Pad of H and W before an AveragePool (which then counts the
// padded zeros) or a Conv becomes that op's padding, in float and in int8 plans (a QDQ model's
// Pad between two equal grids: Inception v3's average pools); other Pads stay.
#include <gtest/gtest.h>

#include "tests/graph_builder.h"

namespace systolic::testing {
namespace {

using ir::Op;

int pad(GraphBuilder& b, int x, std::vector<int64_t> pads, const std::string& name) {
  return b.node(Op::Pad, {x, b.g.add_const_i64(name + ".pads", {8}, pads)}, 1, name)[0];
}

TEST(FoldPad, ZeroPadBecomesThePoolsAndTheConvsPadding) {
  GraphBuilder b;
  const int x = b.input("x", {2, 8, 9, 11});
  const int a = b.node(Op::AveragePool, {pad(b, x, {0, 0, 1, 1, 0, 0, 1, 1}, "p0")}, 1, "avg")[0];
  b.last().set_ints("kernel_shape", {3, 3});
  b.output(a);
  const int c = b.node(Op::Conv, {pad(b, x, {0, 0, 2, 0, 0, 0, 1, 3}, "p1"), b.weights("w", {4, 8, 3, 3})}, 1, "conv")[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  b.output(c);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::fold_pad});
  EXPECT_EQ(count_ops(g, Op::Pad), 0);
  for (const ir::Node& n : g.nodes) {
    if (n.op == Op::AveragePool) {
      EXPECT_EQ(n.ints("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
      EXPECT_EQ(n.i("count_include_pad", 0), 1);
    }
    if (n.op == Op::Conv) {
      EXPECT_EQ(n.ints("pads"), (std::vector<int64_t>{3, 1, 2, 4}));
    }
  }
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
}

// Inception v3's average pool as a QDQ model has it: Pad between two equal grids, then the
// pool; the int8 plan pools the uint8 tensor with the padding counted, no float step left.
TEST(FoldPad, QdqPadBeforeAnAveragePoolRunsInTheUint8Pool) {
  GraphBuilder b;
  const int x = qdq(b, b.input("x", {1, 16, 7, 7}), 0.02f, 0, "x");
  const int p = qdq(b, pad(b, x, {0, 0, 1, 1, 0, 0, 1, 1}, "p"), 0.02f, 0, "p");
  const int a = b.node(Op::AveragePool, {p}, 1, "avg")[0];
  b.last().set_ints("kernel_shape", {3, 3});
  const int y = qdq(b, a, 0.01f, 3, "y");
  b.output(b.node(Op::Conv, {y, int8_weights(b, "w8", {8, 16, 1, 1}, {0.01f})}, 1, "conv")[0]);
  plan::CompileOptions co;
  co.precision = passes::Precision::int8;
  auto pl = plan::compile(b.g, co);
  ASSERT_TRUE(pl.ok()) << pl.status().message();
  EXPECT_EQ(count_ops((*pl)->graph, Op::Pad), 0) << (*pl)->kernel_log;
  EXPECT_EQ(count_ops((*pl)->graph, Op::DequantizeLinear), 0) << (*pl)->kernel_log;
  for (const ir::Node& n : (*pl)->graph.nodes)
    if (n.op == Op::AveragePool) {
      EXPECT_EQ((*pl)->graph.t(n.inputs[0]).dtype, ir::DType::u8);
    }
  const auto got = run_program(*pl, b.g), want = run_graph(b.g, false);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 0.02f * 0.01f * 1.01f) << i;
}

// Left alone: a pad value other than 0, a pad of the channels, a MaxPool (its padding is not
// zeros), a pool that leaves its own padding out of the count, a Pad read twice, a Pad whose
// output grid is not its input's.
TEST(FoldPad, OtherPadsStay) {
  GraphBuilder b;
  const int x = b.input("x", {1, 4, 6, 6});
  const int one = b.g.add_const_f32("one", {}, {1.f});
  b.output(b.node(Op::AveragePool, {b.node(Op::Pad, {x, b.g.add_const_i64("q.pads", {8}, {0, 0, 1, 1, 0, 0, 1, 1}), one}, 1, "valued")[0]})[0]);
  b.last().set_ints("kernel_shape", {3, 3});
  b.output(b.node(Op::AveragePool, {pad(b, x, {0, 1, 0, 0, 0, 1, 0, 0}, "channels")})[0]);
  b.last().set_ints("kernel_shape", {3, 3});
  b.output(b.node(Op::MaxPool, {pad(b, x, {0, 0, 1, 1, 0, 0, 1, 1}, "max")})[0]);
  b.last().set_ints("kernel_shape", {3, 3});
  b.output(b.node(Op::AveragePool, {pad(b, x, {0, 0, 1, 1, 0, 0, 1, 1}, "excluded")})[0]);
  b.last().set_ints("kernel_shape", {3, 3});
  b.last().set_ints("pads", {1, 1, 1, 1});
  const int twice = pad(b, x, {0, 0, 1, 1, 0, 0, 1, 1}, "twice");
  b.output(b.node(Op::AveragePool, {twice})[0]);
  b.last().set_ints("kernel_shape", {3, 3});
  b.output(b.node(Op::Relu, {twice})[0]);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::fold_pad});
  EXPECT_EQ(count_ops(g, Op::Pad), 5);
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);

  GraphBuilder q;
  const int qx = qdq(q, q.input("x", {1, 4, 6, 6}), 0.02f, 0, "x");
  const int qa = q.node(Op::AveragePool, {qdq(q, pad(q, qx, {0, 0, 1, 1, 0, 0, 1, 1}, "p"), 0.03f, 0, "p")})[0];
  q.last().set_ints("kernel_shape", {3, 3});
  q.output(q.node(Op::Conv, {qdq(q, qa, 0.01f, 3, "a"), int8_weights(q, "w8", {8, 4, 1, 1}, {0.01f})})[0]);
  plan::CompileOptions co;
  co.precision = passes::Precision::int8;
  auto pl = plan::compile(q.g, co);
  ASSERT_TRUE(pl.ok()) << pl.status().message();
  EXPECT_EQ(count_ops((*pl)->graph, Op::Pad), 1) << (*pl)->kernel_log;
}

}  // namespace
}  // namespace systolic::testing
