// conv3d_to_conv2d: 3-D convs become 2-D convs on depth taps, with the activations between them
// in 4-D form; the compiled plan agrees with the reference interpreter's 3-D conv.
#include <gtest/gtest.h>

#include "tests/graph_builder.h"

namespace systolic::testing {
namespace {

int conv3d(GraphBuilder& b, int x, int64_t ic, int64_t oc, std::vector<int64_t> k, std::vector<int64_t> strides,
           std::vector<int64_t> pads, int64_t groups = 1, std::vector<int64_t> dil = {1, 1, 1}) {
  const int w = b.weights("w" + std::to_string(b.g.nodes.size()), {oc, ic / groups, k[0], k[1], k[2]}, 0.3f);
  const int y = b.node(ir::Op::Conv, {x, w, b.weights("b" + std::to_string(b.g.nodes.size()), {oc})})[0];
  b.last().set_ints("strides", std::move(strides));
  b.last().set_ints("pads", std::move(pads));
  b.last().set_ints("dilations", std::move(dil));
  b.last().set_i("group", groups);
  return y;
}

// Convs whose input is 5-D after the pass (none should be left).
int volume_convs(const ir::Graph& g) {
  int c = 0;
  for (const ir::Node& n : g.nodes) c += n.op == ir::Op::Conv && g.t(n.inputs[0]).shape.size() == 5;
  return c;
}

}  // namespace

// A residual block of R3D and R(2+1)D convs: (3,3,3) with a 3-D batch norm, (1,3,3) strided in
// H and W, (3,1,1) strided in depth, a (1,1,1) strided shortcut, per-channel scale, ReLUs, a
// global pool; two clips.
TEST(Conv3dToConv2d, AResidualVideoBlockMatchesTheReference) {
  GraphBuilder b;
  const int x = b.input("x", {2, 3, 5, 8, 8});
  int a = conv3d(b, x, 3, 8, {3, 3, 3}, {1, 1, 1}, {1, 1, 1, 1, 1, 1});
  a = b.node(ir::Op::BatchNormalization, {a, b.positive("s", {8}), b.weights("bb", {8}), b.weights("m", {8}),
                                          b.positive("v", {8})})[0];
  a = b.node(ir::Op::Relu, {a})[0];
  int c = conv3d(b, a, 8, 8, {1, 3, 3}, {1, 2, 2}, {0, 1, 1, 0, 1, 1});
  c = b.node(ir::Op::Relu, {c})[0];
  c = conv3d(b, c, 8, 12, {3, 1, 1}, {2, 1, 1}, {1, 0, 0, 1, 0, 0});
  const int shortcut = conv3d(b, a, 8, 12, {1, 1, 1}, {2, 2, 2}, {0, 0, 0, 0, 0, 0});
  int s = b.node(ir::Op::Add, {c, shortcut})[0];
  s = b.node(ir::Op::Mul, {s, b.positive("scale", {1, 12, 1, 1, 1})})[0];
  s = b.node(ir::Op::Relu, {s})[0];
  b.output(b.node(ir::Op::GlobalAveragePool, {s})[0]);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::fold_batchnorm, passes::conv3d_to_conv2d,
                 passes::dead_code_elimination, passes::shape_inference});
  EXPECT_EQ(volume_convs(g), 0);
  EXPECT_EQ(count_ops(g, ir::Op::Conv), 4);
  // Into 4-D form once (the input: two transposes, one a view once the layout pass has run); the
  // global pool reads the 4-D form.
  EXPECT_EQ(count_ops(g, ir::Op::Transpose), 2);
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
  EXPECT_LT(max_rel_error(run_graph(b.g, true, 2), run_graph(b.g, false)), 1e-5);
  // In the plan the taps and the element-wise ops run on NHWC data as the convs do: no reorder
  // but of the pooled [N*D, C, 1, 1] values, whose bytes are the same in both orders.
  auto p = plan::compile(b.g, plan::CompileOptions{});
  ASSERT_TRUE(p.ok()) << p.status().message();
  int reorders = 0;
  for (const ir::Node& n : (*p)->graph.nodes) {
    const ir::Shape& s = (*p)->graph.t(n.inputs[0]).shape;
    reorders += n.op == ir::Op::Reorder && s.size() == 4 && s[2] * s[3] > 1;
  }
  EXPECT_EQ(reorders, 0);
}

// A held value that is also a graph output and read by a conv; a dilated depth kernel whose
// taps fall in the padding at both ends.
TEST(Conv3dToConv2d, HeldValuesAreMadeWhereRead) {
  GraphBuilder b;
  const int x = b.input("x", {1, 4, 6, 5, 7});
  const int a = b.node(ir::Op::Relu, {conv3d(b, x, 4, 6, {3, 3, 3}, {1, 1, 1}, {2, 1, 1, 2, 1, 1}, 1, {2, 1, 1})})[0];
  b.output(a);
  b.output(conv3d(b, a, 6, 5, {2, 3, 3}, {1, 1, 1}, {0, 0, 0, 1, 2, 2}));
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::conv3d_to_conv2d});
  EXPECT_EQ(volume_convs(g), 0);
  EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5);
  // Output 1, through the whole compiled plan.
  plan::CompileOptions co;
  co.optimize = false;
  auto ref = plan::compile(b.g, co);
  ASSERT_TRUE(ref.ok());
  auto opt = plan::compile(b.g, plan::CompileOptions{});
  ASSERT_TRUE(opt.ok()) << opt.status().message();
  std::vector<std::vector<runtime::HostTensor>> outs(2);
  for (int k = 0; k < 2; ++k) {
    auto s = runtime::Session::create(k ? *opt : *ref, runtime::SessionOptions{});
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE((*s)->run({{"x", random_input(b.g.t(x), 7)}}, &outs[k]).ok());
  }
  ASSERT_EQ(outs[0].size(), 2u);
  for (int o = 0; o < 2; ++o) {
    ASSERT_EQ(outs[0][o].shape, outs[1][o].shape);
    const float* r = outs[0][o].as<float>();
    const float* p = outs[1][o].as<float>();
    for (int64_t i = 0; i < outs[0][o].numel(); ++i) ASSERT_NEAR(p[i], r[i], 1e-4 * (1 + std::fabs(r[i]))) << o << " " << i;
  }
}

// Grouped and depthwise convs with depth taps take the 5-D route.
TEST(Conv3dToConv2d, GroupedConvsWithDepthTaps) {
  for (int64_t groups : {2, 6}) {
    GraphBuilder b;
    const int x = b.input("x", {2, 6, 7, 6, 6});
    int y = conv3d(b, x, 6, 6, {3, 3, 3}, {2, 1, 1}, {1, 1, 1, 0, 1, 1}, groups);
    y = conv3d(b, b.node(ir::Op::Relu, {y})[0], 6, 4, {1, 1, 1}, {1, 1, 1}, {0, 0, 0, 0, 0, 0});
    b.output(y);
    ir::Graph g = b.g;
    run_passes(g, {passes::shape_inference, passes::conv3d_to_conv2d});
    EXPECT_EQ(volume_convs(g), 0) << groups;
    EXPECT_LT(max_rel_error(run_graph(b.g, true), run_graph(b.g, false)), 1e-5) << groups;
  }
}

// QDQ 3-D convs (int8 weights per output channel): the quantization follows the values into the
// 2-D convs, which run on the int8 kernels, and the values between them stay uint8 (the taps'
// Gathers fill the depth padding with the zero point): within one output step of the model's
// float emulation, as 2-D QDQ convs are.
TEST(Conv3dToConv2d, QdqConvsRunInInt8) {
  GraphBuilder b;
  const int x = b.input("x", {1, 4, 4, 6, 6});
  std::vector<float> ws(8);
  for (int k = 0; k < 8; ++k) ws[k] = 0.002f * (k + 1);
  int c = b.node(ir::Op::Conv, {qdq(b, x, 0.02f, 128, "x"), int8_weights(b, "w8", {8, 4, 3, 3, 3}, ws)})[0];
  b.last().set_ints("pads", {1, 1, 1, 1, 1, 1});
  c = qdq(b, b.node(ir::Op::Relu, {c})[0], 0.01f, 3, "r");  // zero point 3: the padding is not byte 0
  c = b.node(ir::Op::Conv, {c, int8_weights(b, "w8b", {8, 8, 3, 1, 1}, ws)})[0];
  b.last().set_ints("pads", {1, 0, 0, 1, 0, 0});
  b.output(qdq(b, c, 0.01f, 128, "y"));
  plan::CompileOptions co;
  co.precision = passes::Precision::int8;
  auto p = plan::compile(b.g, co);
  ASSERT_TRUE(p.ok()) << p.status().message();
  const ir::Graph& pg = (*p)->graph;
  int int8_convs = 0, conversions = 0, u8_gathers = 0;
  for (const ir::Node& n : pg.nodes) {
    int8_convs += n.op == ir::Op::Conv && pg.t(n.inputs[1]).dtype == ir::DType::i8;
    conversions += n.op == ir::Op::QuantizeLinear || n.op == ir::Op::DequantizeLinear;
    u8_gathers += n.op == ir::Op::Gather && pg.t(n.outputs[0]).dtype == ir::DType::u8;
  }
  EXPECT_EQ(int8_convs, 2);
  EXPECT_EQ(u8_gathers, 4);  // two padded taps per conv
  // The input's Quantize and the output's rounding to its grid (Quantize, Dequantize); none
  // between the convs.
  EXPECT_EQ(conversions, 3);
  const auto want = run_graph(b.g, false), got = run_program(*p, b.g);
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - want[i]));
  EXPECT_LE(worst, 0.01 * 1.0001);
}

// S3D-style pools and an inception Concat on held values: a max pool with depth padding (its
// taps past the clip read one inside the window) and ceil_mode, averages with and without pads
// counted, one with whole depth windows (a Mean of taps), global pools over depth.
TEST(Conv3dToConv2d, PoolsAndChannelConcatsRunOnTheFourDForms) {
  GraphBuilder b;
  const int x = b.input("x", {2, 3, 5, 9, 9});
  const int a = b.node(ir::Op::Relu, {conv3d(b, x, 3, 4, {1, 3, 3}, {1, 1, 1}, {0, 1, 1, 0, 1, 1})})[0];
  int m = b.node(ir::Op::MaxPool, {a})[0];
  b.last().set_ints("kernel_shape", {3, 3, 3});
  b.last().set_ints("strides", {2, 2, 2});
  b.last().set_ints("pads", {1, 1, 1, 1, 1, 1});
  b.last().set_i("ceil_mode", 1);
  int v = b.node(ir::Op::AveragePool, {a})[0];
  b.last().set_ints("kernel_shape", {1, 3, 3});
  b.last().set_ints("strides", {1, 2, 2});
  b.last().set_ints("pads", {0, 1, 1, 0, 1, 1});
  b.last().set_i("count_include_pad", 1);
  b.last().set_i("ceil_mode", 1);
  int w = b.node(ir::Op::AveragePool, {a})[0];
  b.last().set_ints("kernel_shape", {2, 2, 2});
  b.last().set_ints("strides", {2, 2, 2});
  int u = b.node(ir::Op::MaxPool, {a})[0];
  b.last().set_ints("kernel_shape", {3, 2, 2});
  b.last().set_ints("strides", {1, 2, 2});
  b.last().set_ints("pads", {1, 0, 0, 1, 0, 0});
  // Both [2, 4, 2, 4, 4] after 2x2x2 pooling of [2, 4, 5, 9, 9] (u: depth 5, pooled to 2 below).
  u = b.node(ir::Op::MaxPool, {u})[0];
  b.last().set_ints("kernel_shape", {2, 1, 1});
  b.last().set_ints("strides", {2, 1, 1});
  const int both = b.node(ir::Op::Concat, {w, u})[0];
  b.last().set_i("axis", 1);
  b.output(b.node(ir::Op::GlobalAveragePool, {both})[0]);
  b.output(b.node(ir::Op::GlobalMaxPool, {both})[0]);
  b.output(b.node(ir::Op::Concat, {m, m})[0]);  // a held value made 5-D for a graph output
  b.last().set_i("axis", 2);
  b.output(v);
  ir::Graph g = b.g;
  run_passes(g, {passes::shape_inference, passes::conv3d_to_conv2d, passes::dead_code_elimination});
  int volume_pools = 0;
  for (const ir::Node& n : g.nodes)
    volume_pools += (n.op == ir::Op::MaxPool || n.op == ir::Op::AveragePool || n.op == ir::Op::GlobalAveragePool ||
                     n.op == ir::Op::GlobalMaxPool) && g.t(n.inputs[0]).shape.size() == 5;
  EXPECT_EQ(volume_pools, 0);
  plan::CompileOptions co;
  co.optimize = false;
  auto ref = plan::compile(b.g, co);
  auto opt = plan::compile(b.g, plan::CompileOptions{});
  ASSERT_TRUE(ref.ok() && opt.ok()) << (opt.ok() ? ref.status().message() : opt.status().message());
  std::vector<std::vector<runtime::HostTensor>> outs(2);
  for (int k = 0; k < 2; ++k) {
    auto s = runtime::Session::create(k ? *opt : *ref, runtime::SessionOptions{});
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE((*s)->run({{"x", random_input(b.g.t(x), 7)}}, &outs[k]).ok());
  }
  ASSERT_EQ(outs[0].size(), 4u);
  for (int o = 0; o < 4; ++o) {
    ASSERT_EQ(outs[0][o].shape, outs[1][o].shape) << o;
    const float* r = outs[0][o].as<float>();
    const float* p = outs[1][o].as<float>();
    for (int64_t i = 0; i < outs[0][o].numel(); ++i) ASSERT_NEAR(p[i], r[i], 1e-4 * (1 + std::fabs(r[i]))) << o << " " << i;
  }
}

}  // namespace systolic::testing
