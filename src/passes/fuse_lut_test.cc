// Table fusion: a uint8 table after an int8 conv (dense or depthwise) that nothing else reads
// becomes the conv's last epilogue step, and the plan's bytes are those of the same table run as
// its own step; a conv output read by anyone else, or a float one, keeps its table step.
#include <gtest/gtest.h>

#include "tests/graph_builder.h"

namespace systolic::testing {
namespace {

using ir::Op;

int fused_convs(const ir::Graph& g) {
  int c = 0;
  for (const ir::Node& n : g.nodes) c += n.op == Op::Conv && n.attrs.count("q_table") > 0;
  return c;
}

// x -> conv (dense, or depthwise with `groups`) -> Q/DQ -> SiLU with its sigmoid's grid -> Q/DQ
// -> 1x1 conv -> output 0. `also_read`: another 1x1 conv reads the first conv's output too
// (output 1), which keeps its table a step of its own.
GraphBuilder silu_block(int groups, bool also_read) {
  GraphBuilder b;
  const int x = b.input("x", {2, 16, 9, 9});
  const int w = int8_weights(b, "w8", {16, 16 / groups, 3, 3}, {0.004f});
  int c = b.node(Op::Conv, {qdq(b, x, 0.02f, 128, "x"), w}, 1, "conv")[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  b.last().set_i("group", groups);
  c = qdq(b, c, 0.03f, 120, "c");
  const int s = qdq(b, b.node(Op::Sigmoid, {c}, 1, "sigmoid")[0], 1.f / 256.f, 0, "s");
  const int y = qdq(b, b.node(Op::Mul, {c, s}, 1, "silu")[0], 0.02f, 20, "y");
  b.output(b.node(Op::Conv, {y, int8_weights(b, "w2", {8, 16, 1, 1}, {0.01f})}, 1, "proj")[0]);
  if (also_read) b.output(b.node(Op::Conv, {c, int8_weights(b, "w3", {4, 16, 1, 1}, {0.01f})}, 1, "side")[0]);
  return b;
}

std::shared_ptr<const plan::Program> compile_int8(const ir::Graph& g) {
  plan::CompileOptions co;
  co.precision = passes::Precision::int8;
  auto p = plan::compile(g, co);
  if (!p.ok()) throw std::runtime_error(p.status().message());
  return *p;
}

TEST(FuseLut, TableAfterAConvRunsInItsEpilogueWithTheSameBytes) {
  for (int groups : {1, 16}) {
    GraphBuilder fused = silu_block(groups, false), apart = silu_block(groups, true);
    auto pf = compile_int8(fused.g), pa = compile_int8(apart.g);
    EXPECT_EQ(count_ops(pf->graph, Op::Lut), 0) << pf->kernel_log;
    EXPECT_EQ(fused_convs(pf->graph), 1) << pf->kernel_log;
    EXPECT_EQ(count_ops(pa->graph, Op::Lut), 1) << pa->kernel_log;
    EXPECT_EQ(fused_convs(pa->graph), 0) << pa->kernel_log;
    for (int threads : {1, 2}) {
      const auto a = run_program(pa, apart.g, threads), f = run_program(pf, fused.g, threads);
      ASSERT_EQ(a.size(), f.size());
      int differ = 0;
      for (std::size_t i = 0; i < a.size(); ++i) differ += a[i] != f[i];
      EXPECT_EQ(differ, 0) << "groups " << groups << ", " << threads << " threads";
    }
  }
}

// A conv whose output leaves the plan as float (the model's last conv, dequantized) keeps the
// table as its own step: the kernels look tables up on uint8 outputs only.
TEST(FuseLut, FloatConvOutputKeepsItsTable) {
  GraphBuilder b;
  const int x = b.input("x", {1, 8, 6, 6});
  int c = b.node(Op::Conv, {qdq(b, x, 0.02f, 128, "x"), int8_weights(b, "w8", {8, 8, 1, 1}, {0.004f})})[0];
  c = qdq(b, c, 0.03f, 120, "c");
  b.output(c);
  b.output(qdq(b, b.node(Op::HardSwish, {c})[0], 0.02f, 20, "h"));
  auto p = compile_int8(b.g);
  EXPECT_EQ(fused_convs(p->graph), 0) << p->kernel_log;
}

}  // namespace
}  // namespace systolic::testing
