// int8 tables: element-wise float ops between two uint8 grids of a QDQ model become one Lut
// node, read and written as uint8 by the int8 plan, and compute the model's own values (its
// roundings between the ops included); what a table cannot express stays as it was.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/graph_builder.h"

namespace systolic::testing {
namespace {

using ir::DType;
using ir::Op;

Expected<std::shared_ptr<plan::Program>> compile_int8_qdq(const ir::Graph& g) {
  plan::CompileOptions co;
  co.precision = passes::Precision::int8;
  return plan::compile(g, co);
}

// Within one step of the grid before the final Exp everywhere (a near tie of the int8 conv's
// requantization against the reference's float division: `rel` is exp(step) - 1), equal
// almost everywhere.
void expect_model_values(const std::vector<float>& got, const std::vector<float>& want, float rel) {
  ASSERT_EQ(got.size(), want.size());
  int equal = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], rel * want[i]) << i;
    equal += got[i] == want[i];
  }
  EXPECT_GT(equal, int(got.size()) * 9 / 10);
}

// x -> conv (int8) -> Q/DQ -> `act` ... -> Q/DQ -> Exp (float, reads the result).
struct QdqConv {
  GraphBuilder b;
  int c = -1;
  QdqConv() {
    const int x = b.input("x", {2, 8, 6, 6});
    const int w = int8_weights(b, "w8", {16, 8, 3, 3}, {0.002f});
    c = b.node(Op::Conv, {qdq(b, x, 0.02f, 128, "x"), w}, 1, "conv")[0];
    b.last().set_ints("pads", {1, 1, 1, 1});
    c = qdq(b, c, 0.03f, 120, "c");
  }
};

// EfficientNet's SiLU as a QDQ model writes it: the sigmoid's output has its own grid, which
// changes the answer (the same graph without it computes other values).
TEST(Int8Tables, QdqSiluIsOneTableWithItsInnerRounding) {
  std::vector<float> want[2];
  for (int inner = 1; inner >= 0; --inner) {
    QdqConv m;
    GraphBuilder& b = m.b;
    int s = b.node(Op::Sigmoid, {m.c}, 1, "sigmoid")[0];
    if (inner) s = qdq(b, s, 1.f / 64.f, 0, "s");
    const int y = qdq(b, b.node(Op::Mul, {m.c, s}, 1, "mul")[0], 0.02f, 20, "y");
    b.output(b.node(Op::Exp, {y}, 1, "exp")[0]);
    auto p = compile_int8_qdq(b.g);
    ASSERT_TRUE(p.ok()) << p.status().message();
    const ir::Graph& pg = (*p)->graph;
    EXPECT_EQ(count_tables(pg), 1) << (*p)->kernel_log;
    EXPECT_EQ(count_ops(pg, Op::Sigmoid) + count_ops(pg, Op::Mul) + count_ops(pg, Op::Silu), 0);
    for (const ir::Node& n : pg.nodes)
      if (n.op == Op::Lut) {
        EXPECT_EQ(pg.t(n.inputs[0]).dtype, DType::u8);
        EXPECT_EQ(pg.t(n.outputs[0]).dtype, DType::u8);
      }
    want[inner] = run_graph(b.g, false);
    expect_model_values(run_program(*p, b.g), want[inner], 0.0203f);
  }
  int differ = 0;
  for (std::size_t i = 0; i < want[0].size(); ++i) differ += want[0][i] != want[1][i];
  EXPECT_GT(differ, int(want[0].size()) / 10);
}

// HardSwish as four ops without roundings between them, and a HardSwish node: the same table
// but where the two formulas' float rounding decides a near tie.
TEST(Int8Tables, DecomposedAndWholeHardSwishGiveTheSameTable) {
  std::vector<int64_t> tables[2];
  for (int form = 0; form < 2; ++form) {
    QdqConv m;
    GraphBuilder& b = m.b;
    int h;
    if (form == 0) {
      const int three = b.g.add_const_f32("three", {}, {3.f}), six = b.g.add_const_f32("six", {}, {6.f});
      const int zero = b.g.add_const_f32("zero", {}, {0.f});
      const int t = b.node(Op::Clip, {b.node(Op::Add, {m.c, three})[0], zero, six})[0];
      h = b.node(Op::Div, {b.node(Op::Mul, {m.c, t})[0], six})[0];
    } else {
      h = b.node(Op::HardSwish, {m.c})[0];
    }
    b.output(b.node(Op::Exp, {qdq(b, h, 0.01f, 40, "h")})[0]);
    auto p = compile_int8_qdq(b.g);
    ASSERT_TRUE(p.ok()) << p.status().message();
    ASSERT_EQ(count_tables((*p)->graph), 1) << (*p)->kernel_log;
    for (const ir::Node& n : (*p)->graph.nodes) {
      if (n.op == Op::Lut) tables[form] = n.ints("table");
      if (n.attrs.count("q_table")) tables[form] = n.ints("q_table");
    }
    expect_model_values(run_program(*p, b.g), run_graph(b.g, false), 0.0101f);
  }
  // The same function in two float formulas: a near tie may round apart.
  ASSERT_EQ(tables[0].size(), 256u);
  ASSERT_EQ(tables[1].size(), 256u);
  int apart = 0;
  for (int q = 0; q < 256; ++q) {
    EXPECT_LE(std::abs(tables[0][q] - tables[1][q]), 1) << q;
    apart += tables[0][q] != tables[1][q];
  }
  EXPECT_LE(apart, 2);
}

// A transformer's linear layer (MatMul + bias, then GELU) with a grid on each side of the
// GELU: the MatMul is an int8 conv writing uint8 through its reshape, the GELU a table.
TEST(Int8Tables, QdqGeluAfterALinearLayerIsATable) {
  GraphBuilder b;
  const int x = qdq(b, b.input("x", {2, 9, 32}), 0.02f, 128, "x");
  const int mm = b.node(Op::MatMul, {x, int8_weights(b, "w8", {32, 64}, {0.01f})})[0];
  const int biased = qdq(b, b.node(Op::Add, {mm, b.weights("bias", {64})})[0], 0.02f, 100, "mm");
  const int y = qdq(b, b.node(Op::Gelu, {biased}, 1, "gelu")[0], 0.01f, 20, "y");
  b.output(b.node(Op::Exp, {y})[0]);
  auto p = compile_int8_qdq(b.g);
  ASSERT_TRUE(p.ok()) << p.status().message();
  const ir::Graph& pg = (*p)->graph;
  EXPECT_EQ(count_tables(pg), 1) << (*p)->kernel_log;
  EXPECT_EQ(count_ops(pg, Op::Gelu), 0);
  int int8_convs = 0;
  for (const ir::Node& n : pg.nodes)
    int8_convs += n.op == Op::Conv && pg.t(n.inputs[1]).dtype == DType::i8 && pg.t(n.outputs[0]).dtype == DType::u8;
  EXPECT_EQ(int8_convs, 1) << (*p)->kernel_log;
  // A near tie of the conv's requantization is one step (0.02) before the GELU, whose slope
  // takes it past one step (0.01) after it.
  expect_model_values(run_program(*p, b.g), run_graph(b.g, false), 0.0253f);
}

// No table: an output without a grid (float, read by a graph output), a clamp alone (the int8
// conv's epilogue clamps), an operand that is not the same tensor (a squeeze-excitation gate).
TEST(Int8Tables, WhatATableCannotHoldStaysAsItWas) {
  {
    QdqConv m;
    m.b.output(m.b.node(Op::Sigmoid, {m.c})[0]);
    auto p = compile_int8_qdq(m.b.g);
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ(count_tables((*p)->graph), 0);
  }
  {
    QdqConv m;
    m.b.output(m.b.node(Op::Exp, {qdq(m.b, m.b.node(Op::Relu, {m.c})[0], 0.03f, 0, "r")})[0]);
    auto p = compile_int8_qdq(m.b.g);
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ(count_tables((*p)->graph), 0);
  }
  {
    QdqConv m;
    GraphBuilder& b = m.b;
    const int gate = b.node(Op::Sigmoid, {b.input("gate", {2, 16, 6, 6})})[0];
    b.output(b.node(Op::Exp, {qdq(b, b.node(Op::Mul, {m.c, gate})[0], 0.02f, 20, "y")})[0]);
    auto p = compile_int8_qdq(b.g);
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ(count_tables((*p)->graph), 0);
  }
}

// The reference Lut on float tensors: quantize to lut_x, look up, dequantize from lut_y.
TEST(Int8Tables, ReferenceLutOnFloat) {
  ir::Node n;
  n.op = Op::Lut;
  n.name = "lut";
  std::vector<int64_t> table(256);
  for (int q = 0; q < 256; ++q) table[q] = 255 - q;
  n.set_ints("table", table);
  n.set_floats("lut_x", {0.5f, 10.f});
  n.set_floats("lut_y", {2.f, 3.f});
  std::vector<float> x = {-100.f, 0.f, 0.74f, 0.76f, 1000.f}, y(5);
  ASSERT_TRUE(interp::eval_node(n, {{DType::f32, {5}, x.data()}}, {{DType::f32, {5}, y.data()}}).ok());
  // q = clamp(rne(x / 0.5) + 10): 0, 10, 11, 12, 255; y = (255 - q - 3) * 2.
  EXPECT_EQ(y, (std::vector<float>{504.f, 484.f, 482.f, 480.f, -6.f}));
  n.set_ints("table", {1, 2, 3});
  EXPECT_FALSE(interp::eval_node(n, {{DType::f32, {5}, x.data()}}, {{DType::f32, {5}, y.data()}}).ok());
}

}  // namespace
}  // namespace systolic::testing
