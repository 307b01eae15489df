// int8 lowering: calibrated float graphs and QDQ graphs become int8 convolutions, uint8 pools,
// adds and concats with Quantize/Dequantize only where float code remains, and compute what the
// float graph (or the QDQ model's exact semantics) computes within the quantization's error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "quantize/calibrate.h"
#include "tests/graph_builder.h"

namespace systolic::testing {
namespace {

using ir::DType;
using ir::Op;

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
  return ab / std::sqrt(aa * bb);
}

// Compiles `g` in int8 with activation parameters calibrated on seeded inputs.
std::shared_ptr<plan::Program> compile_int8(const ir::Graph& g) {
  plan::CompileOptions fp;
  fp.fuse_residual = false;
  auto fp32 = plan::compile(g, fp);
  EXPECT_TRUE(fp32.ok()) << fp32.status().message();
  auto ranges = quantize::calibrate(*fp32, [&](const std::vector<runtime::TensorInfo>& ins) {
    std::vector<std::vector<runtime::HostTensor>> sets;
    for (uint32_t s = 0; s < 4; ++s) {
      std::vector<runtime::HostTensor> set;
      for (std::size_t k = 0; k < ins.size(); ++k) set.push_back(random_input(g.t(g.inputs[k]), 7 + uint32_t(k) + 10 * s));
      sets.push_back(set);
    }
    return Expected<std::vector<std::vector<runtime::HostTensor>>>(sets);
  }, {});
  EXPECT_TRUE(ranges.ok()) << ranges.status().message();
  plan::CompileOptions co;
  co.precision = passes::Precision::int8;
  co.activation_quant = std::make_shared<const quantize::QuantMap>(*ranges);
  auto p = plan::compile(g, co);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return *p;
}

// An int8 compile of a graph that brings its own quantization (QDQ).
Expected<std::shared_ptr<plan::Program>> compile_given(const ir::Graph& g) {
  plan::CompileOptions co;
  co.precision = passes::Precision::int8;
  return plan::compile(g, co);
}

int count_int8_convs(const plan::Program& p) {
  int n = 0;
  for (const ir::Node& node : p.graph.nodes)
    n += node.op == Op::Conv && p.graph.t(node.inputs[1]).dtype == DType::i8;
  return n;
}

TEST(LowerInt8, CalibratedResidualBlockRunsInInt8) {
  GraphBuilder b;
  const int x = b.input("x", {2, 8, 10, 10});
  int c = b.node(Op::Conv, {x, b.weights("w1", {16, 8, 3, 3}), b.weights("b1", {16})})[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  const int r = b.node(Op::Relu, {c})[0];
  const int p = b.node(Op::MaxPool, {r})[0];
  b.last().set_ints("kernel_shape", {2, 2});
  b.last().set_ints("strides", {2, 2});
  c = b.node(Op::Conv, {p, b.weights("w2", {16, 16, 3, 3}), b.weights("b2", {16})})[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  const int add = b.node(Op::Add, {c, p})[0];
  const int r2 = b.node(Op::Relu, {add})[0];
  const int gap = b.node(Op::GlobalAveragePool, {r2})[0];
  const int f = b.node(Op::Flatten, {gap})[0];
  const int y = b.node(Op::Gemm, {f, b.weights("fc", {5, 16}), b.weights("fcb", {5})})[0];
  b.last().set_i("transB", 1);
  b.output(y);
  auto p8 = compile_int8(b.g);
  EXPECT_EQ(p8->precision, "int8");
  EXPECT_EQ(count_int8_convs(*p8), 3);  // both convs and the fully connected layer
  int u8_pools = 0;
  for (const ir::Node& n : p8->graph.nodes)
    u8_pools += (n.op == Op::MaxPool || n.op == Op::GlobalAveragePool) && p8->graph.t(n.outputs[0]).dtype == DType::u8;
  EXPECT_EQ(u8_pools, 2);
  EXPECT_EQ(p8->graph.t(p8->graph.outputs[0]).dtype, DType::f32);  // logits stay float
  const auto want = run_graph(b.g, false), got = run_program(p8, b.g);
  EXPECT_GT(cosine(got, want), 0.999);
}

// A calibrated model's SiLU (Sigmoid and Mul) or HardSwish between two convs: one uint8 table
// from the first conv's output grid to the activation's (int8_tables; the calibration measured
// the conv's own output), no float pass left between them.
TEST(LowerInt8, CalibratedSiluAndHardSwishBecomeTables) {
  for (Op act : {Op::Sigmoid, Op::HardSwish}) {
    GraphBuilder b;
    const int x = b.input("x", {2, 8, 10, 10});
    const int c = b.node(Op::Conv, {x, b.weights("w1", {16, 8, 3, 3}), b.weights("b1", {16})})[0];
    b.last().set_ints("pads", {1, 1, 1, 1});
    const int s = act == Op::Sigmoid ? b.node(Op::Mul, {c, b.node(Op::Sigmoid, {c})[0]})[0] : b.node(act, {c})[0];
    const int y = b.node(Op::Conv, {s, b.weights("w2", {8, 16, 1, 1}), b.weights("b2", {8})})[0];
    b.output(y);
    auto p8 = compile_int8(b.g);
    EXPECT_EQ(count_int8_convs(*p8), 2);
    EXPECT_EQ(count_tables(p8->graph), 1) << p8->kernel_log;
    EXPECT_EQ(count_ops(p8->graph, Op::QuantizeLinear), 1) << p8->kernel_log;  // the float input only
    EXPECT_EQ(count_ops(p8->graph, Op::DequantizeLinear), 0) << p8->kernel_log;
    const auto want = run_graph(b.g, false), got = run_program(p8, b.g);
    EXPECT_GT(cosine(got, want), 0.999) << ir::op_name(act);
  }
}

TEST(LowerInt8, UnfusedAddAndConcatRunOnUint8) {
  GraphBuilder b;
  const int x = b.input("x", {1, 8, 6, 6});
  const int c1 = b.node(Op::Conv, {x, b.weights("w1", {8, 8, 1, 1})})[0];
  const int c2 = b.node(Op::Conv, {x, b.weights("w2", {8, 8, 1, 1})})[0];
  const int p1 = b.node(Op::MaxPool, {c1})[0];
  b.last().set_ints("kernel_shape", {1, 1});
  const int p2 = b.node(Op::MaxPool, {c2})[0];
  b.last().set_ints("kernel_shape", {1, 1});
  const int add = b.node(Op::Add, {p1, p2})[0];
  const int cat = b.node(Op::Concat, {add, p1})[0];
  b.last().set_i("axis", 1);
  const int y = b.node(Op::Conv, {cat, b.weights("w3", {4, 16, 1, 1})})[0];
  b.output(y);
  auto p8 = compile_int8(b.g);
  EXPECT_NE(p8->kernel_log.find("2 adds/concats in int8"), std::string::npos) << p8->kernel_log;
  auto s = runtime::Session::create(p8);
  ASSERT_TRUE(s.ok()) << s.status().message();
  int uint8_steps = 0;
  for (const auto& l : (*s)->profile())  // the Add on qeltwise, the Concat's requantizations as tables
    uint8_steps += l.kernel.rfind(l.op == "Concat" ? "qlut_" : "qeltwise_", 0) == 0;
  EXPECT_EQ(uint8_steps, 2);
  EXPECT_GT(cosine(run_program(p8, b.g), run_graph(b.g, false)), 0.999);
}

// A QDQ squeeze-excitation block (EfficientNet's, MobileNetV3's): the gate (pool, 1x1 conv,
// sigmoid) multiplies the tensor per image and channel on uint8 (kernels/qeltwise scale), NHWC
// with no reorder, and computes the model's values.
TEST(LowerInt8, QdqSqueezeExcitationGateRunsOnUint8) {
  GraphBuilder b;
  const int y = qdq_squeeze_excitation(b, b.input("x", {2, 8, 6, 6}), "se");
  b.output(b.node(Op::Exp, {y})[0]);
  auto p = compile_given(b.g);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(count_ops((*p)->graph, Op::Reorder), 1) << (*p)->kernel_log;  // the float output only
  auto s = runtime::Session::create(*p);
  ASSERT_TRUE(s.ok()) << s.status().message();
  int gates = 0;
  for (const auto& l : (*s)->profile()) gates += l.op == "Mul" && l.kernel.rfind("qeltwise_", 0) == 0;
  EXPECT_EQ(gates, 1);
  const auto want = run_graph(b.g, false), got = run_program(*p, b.g);
  ASSERT_EQ(got.size(), want.size());
  int equal = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 0.0203 * want[i]) << i;  // at most one grid step apart (a near tie)
    equal += got[i] == want[i];
  }
  EXPECT_GT(equal, int(got.size()) * 9 / 10);
}

// ShuffleNet's block in int8: the channel halving (Slice) and the shuffle pass uint8 values
// through with their input's quantization; the Concat before the shuffle stays (it requantizes),
// so no Quantize or Dequantize step remains between the convs.
TEST(LowerInt8, ShuffleNetSliceAndShuffleStayUint8) {
  GraphBuilder b;
  const int64_t c = 16, h = 6, w = 6;
  const int x = b.input("x", {1, 8, h, w});
  const int c0 = b.node(Op::Conv, {x, b.weights("w0", {c, 8, 1, 1})})[0];
  const int r0 = b.node(Op::Relu, {c0})[0];
  const int lo = b.node(Op::Slice, {r0, b.g.add_const_i64("s0", {1}, {0}), b.g.add_const_i64("e0", {1}, {c / 2}),
                                     b.g.add_const_i64("a0", {1}, {1})})[0];
  const int hi = b.node(Op::Slice, {r0, b.g.add_const_i64("s1", {1}, {c / 2}), b.g.add_const_i64("e1", {1}, {c}),
                                     b.g.add_const_i64("a1", {1}, {1})})[0];
  const int br = b.node(Op::Conv, {hi, b.weights("wb", {c / 2, c / 2, 1, 1})})[0];
  const int rb = b.node(Op::Relu, {br})[0];
  const int cat = b.node(Op::Concat, {lo, rb})[0];
  b.last().set_i("axis", 1);
  const int s5 = b.node(Op::Reshape, {cat, b.g.add_const_i64("sh5", {5}, {1, 2, c / 2, h, w})})[0];
  const int t = b.node(Op::Transpose, {s5})[0];
  b.last().set_ints("perm", {0, 2, 1, 3, 4});
  const int s4 = b.node(Op::Reshape, {t, b.g.add_const_i64("sh4", {4}, {1, c, h, w})})[0];
  b.output(b.node(Op::Conv, {s4, b.weights("w3", {4, c, 1, 1})})[0]);
  auto p8 = compile_int8(b.g);
  auto s = runtime::Session::create(p8);
  ASSERT_TRUE(s.ok()) << s.status().message();
  std::map<std::string, int> ops;
  for (const auto& l : (*s)->profile()) ++ops[l.op + " " + l.kernel.substr(0, l.kernel.find('_'))];
  EXPECT_EQ(ops["Slice slice"], 2);
  EXPECT_EQ(ops["ChannelShuffle shuffle"], 1);
  EXPECT_EQ(ops["Concat qlut"], 1);
  EXPECT_EQ(ops["QuantizeLinear quant"], 1);  // the float input only
  EXPECT_EQ(ops["DequantizeLinear quant"], 0);
  const ir::Graph& g = (*s)->program().graph;
  for (const ir::Node& n : g.nodes) {
    if (n.op == Op::Slice || n.op == Op::ChannelShuffle) {
      EXPECT_EQ(g.t(n.outputs[0]).dtype, DType::u8) << n.name;
    }
  }
  EXPECT_GT(cosine(run_program(p8, b.g), run_graph(b.g, false)), 0.999);
}

TEST(LowerInt8, KeepFp32AndMissingParametersStayFloat) {
  GraphBuilder b;
  const int x = b.input("x", {1, 4, 5, 5});
  const int c1 = b.node(Op::Conv, {x, b.weights("w1", {4, 4, 3, 3})}, 1, "first")[0];
  const int c2 = b.node(Op::Conv, {c1, b.weights("w2", {4, 4, 1, 1})}, 1, "second")[0];
  b.output(c2);
  plan::CompileOptions co;
  co.precision = passes::Precision::int8;
  auto none = plan::compile(b.g, co);
  ASSERT_FALSE(none.ok());  // no parameters at all: an error, not a silent float plan
  EXPECT_NE(none.status().message().find("no convolution could be quantized"), std::string::npos);
  auto q = std::make_shared<quantize::QuantMap>();
  (*q)["x"] = quantize::uint8_params(-3.f, 3.f);
  (*q)[b.g.t(c1).name] = quantize::uint8_params(-10.f, 10.f);
  co.activation_quant = q;
  co.keep_fp32 = {"second"};
  auto p = plan::compile(b.g, co);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(count_int8_convs(**p), 1);
  EXPECT_NE((*p)->kernel_log.find("second stays float: kept in float"), std::string::npos) << (*p)->kernel_log;
}

// A QDQ graph as exporters write it: Q/DQ on activations, int8 weights behind DQ.
TEST(LowerInt8, QdqGraphFoldsAndMatchesItsReference) {
  GraphBuilder b;
  const int x = b.input("x", {1, 8, 6, 6});
  const int xq = qdq(b, x, 0.02f, 128, "x");
  std::vector<float> ws(16);
  for (int k = 0; k < 16; ++k) ws[k] = 0.001f * (k + 1);
  const int w = int8_weights(b, "w8", {16, 8, 3, 3}, ws);
  const int c = b.node(Op::Conv, {xq, w})[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  const int r = b.node(Op::Relu, {c})[0];
  const int y = qdq(b, r, 0.01f, 0, "y");
  b.output(y);
  auto p = compile_given(b.g);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(count_int8_convs(**p), 1);
  EXPECT_NE((*p)->kernel_log.find("fold_qdq: 2 DequantizeLinear folded"), std::string::npos) << (*p)->kernel_log;
  const auto want = run_graph(b.g, false), got = run_program(*p, b.g);
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - want[i]));
  EXPECT_LE(worst, 0.01 * 1.0001);  // at most one output step from the float emulation of the model
}

// A calibrated plan keeps a sum that a normalization reads in float (a transformer's residual
// stream), and any Add or Concat named in --keep-fp32; other sums of int8 convs run on uint8.
TEST(LowerInt8, SumsANormalizationReadsAndKeptSumsStayFloat) {
  auto build = [](GraphBuilder& b, bool norm) {
    const int x = b.input("x", {1, 8, 6, 6});
    // Pools between the convs and the sum: an Add right after a conv fuses into its epilogue.
    int p[2];
    for (int k = 0; k < 2; ++k) {
      const int c = b.node(Op::Conv, {x, b.weights("w" + std::to_string(k), {8, 8, 1, 1})})[0];
      p[k] = b.node(Op::MaxPool, {c})[0];
      b.last().set_ints("kernel_shape", {1, 1});
    }
    const int add = b.node(Op::Add, {p[0], p[1]}, 1, "sum")[0];
    int y;
    if (norm) {
      y = b.node(Op::LayerNormalization, {add, b.positive("g", {6}), b.weights("beta", {6})})[0];
      b.last().set_i("axis", -1);
    } else {
      y = b.node(Op::Relu, {add})[0];
    }
    b.output(b.node(Op::Conv, {y, b.weights("w3", {4, 8, 1, 1})})[0]);
  };
  for (bool norm : {false, true}) {
    GraphBuilder b;
    build(b, norm);
    auto p8 = compile_int8(b.g);
    const bool int8_add = p8->kernel_log.find("1 adds/concats in int8") != std::string::npos;
    EXPECT_EQ(int8_add, !norm) << p8->kernel_log;
    EXPECT_GT(cosine(run_program(p8, b.g), run_graph(b.g, false)), 0.999);
  }
  GraphBuilder b;
  build(b, false);
  plan::CompileOptions fp;
  auto fp32 = plan::compile(b.g, fp);
  ASSERT_TRUE(fp32.ok()) << fp32.status().message();
  auto q = std::make_shared<quantize::QuantMap>();
  for (const auto& t : b.g.tensors)
    if (!t.is_const()) (*q)[t.name] = quantize::uint8_params(-4.f, 4.f);
  plan::CompileOptions co;
  co.precision = passes::Precision::int8;
  co.activation_quant = q;
  co.keep_fp32 = {"sum"};
  auto p = plan::compile(b.g, co);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_NE((*p)->kernel_log.find("0 adds/concats in int8"), std::string::npos) << (*p)->kernel_log;
}

// A conv whose input was calibrated to a tiny range: its bias, in units of the input's scale
// times the weights', is far past int32. The weight scales widen (the bias dominates those
// channels) instead of the bias clamping into a wrong output.
TEST(LowerInt8, BiasPastTheExactRangeWidensTheWeightScale) {
  GraphBuilder b;
  const int x = b.input("x", {1, 8, 6, 6});
  const int c1 = b.node(Op::Conv, {x, b.weights("w1", {8, 8, 1, 1}, 1e-9f)})[0];
  const int y = b.node(Op::Conv, {c1, b.weights("w2", {4, 8, 1, 1}), b.weights("b2", {4})})[0];
  b.output(y);
  auto p8 = compile_int8(b.g);
  EXPECT_EQ(count_int8_convs(*p8), 2);
  const auto want = run_graph(b.g, false), got = run_program(p8, b.g);
  ASSERT_EQ(got.size(), want.size());
  double worst = 0, peak = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(double(got[i]) - want[i])), peak = std::max(peak, std::fabs(double(want[i])));
  EXPECT_GT(peak, 0.01);
  EXPECT_LE(worst, 1e-3 * peak);
}

// The same in a QDQ model, whose int8 weights keep their given scales: the conv stays float
// (the model's own arithmetic on dequantized values), saying why.
TEST(LowerInt8, QdqBiasPastTheExactRangeStaysFloat) {
  GraphBuilder b;
  const int x = b.input("x", {1, 4, 5, 5});
  const int r = b.node(Op::Relu, {x})[0];
  // A first conv whose outputs are all within 2.5e-8 (the grid of y1 below holds them)...
  const int c1 = b.node(Op::Conv, {qdq(b, r, 0.02f, 0, "x"), int8_weights(b, "w1", {4, 4, 3, 3}, {1e-12f})}, 1, "first")[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  const int r1 = b.node(Op::Relu, {c1})[0];
  // ... then 1e-10 x 1e-3 per accumulator unit: a bias of 0.5 is 5e12 units.
  const int b2 = b.g.add_const_f32("b2", {4}, {0.5f, -0.25f, 0.125f, 1.f});
  const int c2 =
      b.node(Op::Conv, {qdq(b, r1, 1e-10f, 0, "y1"), int8_weights(b, "w2", {4, 4, 3, 3}, {0.001f}), b2}, 1, "second")[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  b.output(c2);
  auto p = compile_given(b.g);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(count_int8_convs(**p), 1);
  EXPECT_NE((*p)->kernel_log.find("second stays float: its bias"), std::string::npos) << (*p)->kernel_log;
  const auto want = run_graph(b.g, false), got = run_program(*p, b.g);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5 * (1 + std::fabs(want[i]))) << i;
}

// A QDQ model rounds a conv's output that a float op reads (here Exp): the int8 conv writes
// float, then rounds it to that uint8 grid in the same step, saturating where the model does.
TEST(LowerInt8, QdqFloatOutputIsRoundedToItsGrid) {
  GraphBuilder b;
  const int x = b.input("x", {1, 8, 6, 6});
  const int w = int8_weights(b, "w8", {16, 8, 3, 3}, {0.002f});
  const int c = b.node(Op::Conv, {qdq(b, x, 0.02f, 128, "x"), w}, 1, "conv")[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  // Outputs past 2.55 and below 0 saturate on this grid.
  const int y = b.node(Op::Exp, {qdq(b, c, 0.01f, 0, "c")})[0];
  b.output(y);
  auto p = compile_given(b.g);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(count_int8_convs(**p), 1);
  int grids = 0;
  for (const ir::Node& n : (*p)->graph.nodes) grids += n.attrs.count("q_grid") > 0;
  EXPECT_EQ(grids, 1) << (*p)->kernel_log;
  const auto want = run_graph(b.g, false), got = run_program(*p, b.g);
  ASSERT_EQ(got.size(), want.size());
  int saturated = 0, equal = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 0.0101 * want[i]) << i;  // at most one grid step apart (a near tie)
    equal += got[i] == want[i];
    saturated += want[i] == 1.f || std::fabs(want[i] - std::exp(2.55f)) < 1e-5f;
  }
  EXPECT_GT(saturated, 50);
  EXPECT_GT(equal, int(got.size()) * 9 / 10);
}

// A float-only activation between two grids of a QDQ model: a uint8 table (int8_tables), or,
// kept from the tables (--keep-fp32 names the activation), fused into the int8 conv, which
// keeps the model's rounding of the sum before it, then the activation, then the rounding of
// its own output (read by float code). Both compute the model's values.
TEST(LowerInt8, QdqRoundingBeforeAFloatActivationIsKept) {
  GraphBuilder b;
  const int x = b.input("x", {1, 8, 6, 6});
  const int w = int8_weights(b, "w8", {16, 8, 3, 3}, {0.002f});
  const int c = b.node(Op::Conv, {qdq(b, x, 0.02f, 128, "x"), w}, 1, "conv")[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  // A coarse grid before HardSwish (steps of 0.05 from -3.2), a finer one after it.
  const int h = b.node(Op::HardSwish, {qdq(b, c, 0.05f, 64, "c")}, 1, "hswish")[0];
  const int y = b.node(Op::Exp, {qdq(b, h, 0.01f, 40, "h")})[0];
  b.output(y);
  const auto want = run_graph(b.g, false);
  for (bool table : {true, false}) {
    plan::CompileOptions co;
    co.precision = passes::Precision::int8;
    if (!table) co.keep_fp32 = {"hswish"};
    auto p = plan::compile(b.g, co);
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ(count_int8_convs(**p), 1);
    int pre = 0, grids = 0;
    for (const ir::Node& n : (*p)->graph.nodes) {
      pre += n.attrs.count("q_pre_grid") > 0;
      grids += n.attrs.count("q_grid") > 0;
    }
    EXPECT_EQ(count_tables((*p)->graph), table ? 1 : 0) << (*p)->kernel_log;
    EXPECT_EQ(pre, table ? 0 : 1) << (*p)->kernel_log;
    EXPECT_EQ(grids, table ? 0 : 1) << (*p)->kernel_log;
    const auto got = run_program(*p, b.g);
    ASSERT_EQ(got.size(), want.size());
    int equal = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 0.0101 * want[i]) << i;  // at most one grid step apart (a near tie)
      equal += got[i] == want[i];
    }
    EXPECT_GT(equal, int(got.size()) * 9 / 10) << (table ? "table" : "fused");
  }
}

// A QDQ model's rounding of its float input reaches float readers too, not only the int8 conv
// that reads the input's uint8 form (they read the raw input).
TEST(LowerInt8, QdqRoundingOfTheInputReachesFloatReaders) {
  GraphBuilder b;
  const int x = b.input("x", {1, 8, 6, 6});
  const int xq = qdq(b, x, 0.05f, 128, "x");
  const int y = b.node(Op::Relu, {xq}, 1, "relu")[0];
  const int w = int8_weights(b, "w8", {16, 8, 3, 3}, {0.002f});
  const int c = b.node(Op::Conv, {xq, w}, 1, "conv")[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  b.output(y);
  b.output(c);
  auto p = compile_given(b.g);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(count_int8_convs(**p), 1);
  const auto want = run_graph(b.g, false), got = run_program(*p, b.g);
  ASSERT_EQ(got.size(), want.size());
  int rounded = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i], want[i]) << i;
    rounded += want[i] != std::max(0.f, std::nearbyint(want[i] / 0.05f) * 0.05f) ? 0 : 1;
  }
  EXPECT_EQ(rounded, int(got.size()));
}

// A float input quantized for an NHWC int8 conv is written in NHWC by its QuantizeLinear
// (fuse_quantize_reorder): no uint8 reorder is left, and the result is the model's (an RGB
// input takes the kernels' shuffled path, 16 channels the general one; two images).
TEST(LowerInt8, FloatInputIsQuantizedStraightToNhwc) {
  for (int64_t c : {3, 16}) {
    GraphBuilder b;
    const int x = b.input("x", {2, c, 9, 11});
    const int xq = qdq(b, x, 0.02f, 128, "x");
    const int w = int8_weights(b, "w8", {8, c, 3, 3}, {0.002f});
    const int conv = b.node(Op::Conv, {xq, w})[0];
    b.last().set_ints("pads", {1, 1, 1, 1});
    const int y = qdq(b, b.node(Op::Relu, {conv})[0], 0.01f, 0, "y");
    b.output(y);
    auto p = compile_given(b.g);
    ASSERT_TRUE(p.ok()) << p.status().message();
    const ir::Graph& g = (*p)->graph;
    int u8_reorders = 0, nhwc_quantizes = 0;
    for (const ir::Node& n : g.nodes) {
      u8_reorders += n.op == Op::Reorder && g.t(n.inputs[0]).dtype == DType::u8;
      nhwc_quantizes += n.op == Op::QuantizeLinear && g.t(n.outputs[0]).layout == ir::Layout::nhwc;
    }
    EXPECT_EQ(u8_reorders, 0) << c;
    EXPECT_EQ(nhwc_quantizes, 1) << c;
    const auto want = run_graph(b.g, false), got = run_program(*p, b.g);
    ASSERT_EQ(got.size(), want.size());
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - want[i]));
    EXPECT_LE(worst, 0.01 * 1.0001) << c;  // at most one output step from the float emulation
  }
}

// A QDQ model that quantizes no convolution (a MatMul network) defaults to fp32, computing its
// Q/DQ pairs in float; asked for int8 it runs its MatMul on the int8 kernels. One with a
// quantized convolution defaults to int8.
TEST(LowerInt8, QdqModelWithoutQuantizedConvsDefaultsToFp32) {
  GraphBuilder b;
  const int x = b.input("x", {4, 16});
  std::vector<int8_t> wq(16 * 8);
  for (std::size_t i = 0; i < wq.size(); ++i) wq[i] = static_cast<int8_t>((i * 37) % 200 - 100);
  AlignedBytes wb(wq.size());
  std::memcpy(wb.data(), wq.data(), wq.size());
  const int w8 = b.g.add_const("w8", DType::i8, {16, 8}, std::move(wb));
  const int ws = b.g.add_const_f32("w8.s", {}, {0.01f});
  const int w = b.node(Op::DequantizeLinear, {w8, ws})[0];
  b.output(b.node(Op::MatMul, {qdq(b, x, 0.05f, 128, "x"), w})[0]);
  EXPECT_FALSE(plan::has_quantized_convs(b.g));
  plan::CompileOptions co;
  co.precision_auto = true;
  auto p = plan::compile(b.g, co);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ((*p)->precision, "fp32");
  const auto want = run_graph(b.g, false), got = run_program(*p, b.g);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4f * (1.f + std::fabs(want[i]))) << i;
  // Asked for int8, its MatMul runs on the int8 kernels (a 1x1 conv over the quantized input).
  auto p8 = compile_given(b.g);
  ASSERT_TRUE(p8.ok()) << p8.status().message();
  EXPECT_EQ(count_int8_convs(**p8), 1);
  const auto got8 = run_program(*p8, b.g);
  for (std::size_t i = 0; i < got8.size(); ++i) EXPECT_NEAR(got8[i], want[i], 1e-4f * (1.f + std::fabs(want[i]))) << i;

  GraphBuilder c;
  const int cx = c.input("x", {1, 8, 6, 6});
  c.output(c.node(Op::Conv, {qdq(c, cx, 0.02f, 128, "x"), int8_weights(c, "w8", {16, 8, 3, 3}, {0.002f})})[0]);
  EXPECT_TRUE(plan::has_quantized_convs(c.g));
  auto pc = plan::compile(c.g, co);
  ASSERT_TRUE(pc.ok()) << pc.status().message();
  EXPECT_EQ((*pc)->precision, "int8");
}

// A QDQ Gemm (transposed B, 7-bit weights with a scale per output column) becomes an int8 1x1
// conv with the model's own integers and scales: re-quantized to a scale of the compiler's,
// a tenth of MobileNetV3's classifier outputs came out one step off.
TEST(LowerInt8, QdqGemmKeepsItsWeightScales) {
  GraphBuilder b;
  // A 1x1 image: the pool copies its input's integers (no average to round differently).
  const int x = b.input("x", {2, 16, 1, 1});
  const int gap = b.node(Op::GlobalAveragePool, {qdq(b, x, 0.02f, 100, "x")})[0];
  const int f = b.node(Op::Flatten, {qdq(b, gap, 0.02f, 100, "gap")})[0];
  std::vector<int8_t> wq(8 * 16);
  for (std::size_t i = 0; i < wq.size(); ++i) wq[i] = static_cast<int8_t>((i * 37) % 127 - 63);
  AlignedBytes wb(wq.size());
  std::memcpy(wb.data(), wq.data(), wq.size());
  const int w8 = b.g.add_const("w8", DType::i8, {8, 16}, std::move(wb));
  std::vector<float> scales(8);
  for (int k = 0; k < 8; ++k) scales[k] = 0.003f + 0.0007f * k;
  const int ws = b.g.add_const_f32("w8.s", {8}, scales);
  AlignedBytes wz(8, 0);
  const int wzp = b.g.add_const("w8.z", DType::i8, {8}, std::move(wz));
  const int w = b.node(Op::DequantizeLinear, {w8, ws, wzp})[0];
  b.last().set_i("axis", 0);
  const int y = b.node(Op::Gemm, {qdq(b, f, 0.02f, 100, "f"), w}, 1, "fc")[0];
  b.last().set_i("transB", 1);
  b.output(b.node(Op::Relu, {qdq(b, y, 0.0005f, 120, "y")})[0]);
  plan::CompileOptions co;
  co.precision = passes::Precision::int8;
  std::vector<float> lowered;  // the int8 conv's weight scales, before packing
  auto p = plan::compile(b.g, co, [&](const char* pass, const ir::Graph& g) {
    if (std::string(pass) != "lower_int8") return;
    for (const ir::Node& n : g.nodes)
      if (n.op == Op::Conv && g.t(n.inputs[1]).dtype == DType::i8) lowered = g.t(n.inputs[1]).quant.scale;
  });
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(count_int8_convs(**p), 1) << (*p)->kernel_log;
  EXPECT_EQ(lowered, scales);
  const auto want = run_graph(b.g, false), got = run_program(*p, b.g);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << i;
}

// A video model's 5-D pool (and a 1-D one) runs in float: only 2-D pools have int8 kernels.
// Given uint8 input, the interpreter's pools refused it at run time.
TEST(LowerInt8, PoolsOtherThan2DStayFloat) {
  GraphBuilder b;
  const int x = b.input("x", {1, 3, 4, 6, 6});
  int c = b.node(Op::Conv, {x, b.weights("w", {8, 3, 3, 3, 3}), b.weights("bias", {8})})[0];
  b.last().set_ints("pads", {1, 1, 1, 1, 1, 1});
  c = b.node(Op::Relu, {c})[0];
  const int gap = b.node(Op::GlobalAveragePool, {c})[0];
  const int r = b.node(Op::Reshape, {gap, b.g.add_const_i64("shape", {3}, {1, 1, 8})})[0];
  const int p1 = b.node(Op::MaxPool, {r})[0];
  b.last().set_ints("kernel_shape", {2});
  b.output(b.node(Op::Flatten, {p1})[0]);
  auto p = compile_int8(b.g);
  ASSERT_TRUE(p);
  for (const ir::Node& n : p->graph.nodes)
    if (n.op == Op::GlobalAveragePool || n.op == Op::MaxPool) {
      EXPECT_EQ(p->graph.t(n.inputs[0]).dtype, DType::f32) << n.name;
    }
  EXPECT_GT(cosine(run_program(p, b.g), run_graph(b.g, false)), 0.999);
}

// A scale no int8 kernel can use is an error naming the node and the value; fp32 still runs it.
TEST(LowerInt8, NonPositiveScaleIsANamedError) {
  for (float bad : {0.f, -0.5f, std::nanf(""), INFINITY}) {
    GraphBuilder b;
    const int x = b.input("x", {1, 4, 5, 5});
    const int s = b.g.add_const_f32("x.s", {}, {bad});
    AlignedBytes z(1, static_cast<uint8_t>(128));
    const int zt = b.g.add_const("x.z", DType::u8, {}, std::move(z));
    const int q = b.node(Op::QuantizeLinear, {x, s, zt}, 1, "quant_x")[0];
    const int dq = b.node(Op::DequantizeLinear, {q, s, zt}, 1, "dequant_x")[0];
    b.output(b.node(Op::Conv, {dq, b.weights("w", {4, 4, 3, 3})})[0]);
    plan::CompileOptions co;
    co.precision = passes::Precision::int8;
    auto p = plan::compile(b.g, co);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_NE(p.status().message().find("dequant_x: scale "), std::string::npos) << p.status().message();
    EXPECT_NE(p.status().message().find("is not a positive finite number"), std::string::npos) << p.status().message();
    co.precision = passes::Precision::fp32;
    EXPECT_TRUE(plan::compile(b.g, co).ok()) << bad;
  }
}

}  // namespace
}  // namespace systolic::testing
