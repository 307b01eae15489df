// Quantization ops in the interpreter and shape inference, on hand-computed cases: rounding
// ties to even, saturation, per-axis and per-channel parameters, padding reading the zero
// point, groups, zero points in integer matmuls, clear errors for parameters that do not fit;
// and QuantizeLinear -> DequantizeLinear compiled and run by a Session.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "tests/graph_builder.h"

namespace systolic::testing {
namespace {

using ir::DType;
using ir::Op;

// A test tensor; dtype undefined stands for an omitted optional input.
struct Val {
  DType dtype = DType::undefined;
  ir::Shape shape;
  std::vector<uint8_t> bytes;

  template <typename T>
  std::vector<T> get() const {
    std::vector<T> v(bytes.size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
  }
};

template <typename T>
Val make(DType dt, ir::Shape s, const std::vector<T>& v) {
  Val t{dt, std::move(s), std::vector<uint8_t>(v.size() * sizeof(T))};
  if (!v.empty()) std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}
Val f32(ir::Shape s, const std::vector<float>& v) { return make(DType::f32, std::move(s), v); }
Val u8(ir::Shape s, const std::vector<uint8_t>& v) { return make(DType::u8, std::move(s), v); }
Val i8(ir::Shape s, const std::vector<int8_t>& v) { return make(DType::i8, std::move(s), v); }
Val i32(ir::Shape s, const std::vector<int32_t>& v) { return make(DType::i32, std::move(s), v); }
Val none() { return Val{}; }

// One node on constant inputs: shape inference, then the interpreter.
Expected<std::vector<Val>> run(Op op, const std::vector<Val>& ins, const std::function<void(ir::Node&)>& attrs = {},
                               int n_out = 1) {
  ir::Graph g;
  ir::Node n;
  n.op = op;
  n.name = "node0";
  for (std::size_t i = 0; i < ins.size(); ++i) {
    if (ins[i].dtype == DType::undefined) {
      n.inputs.push_back(-1);
      continue;
    }
    AlignedBytes b(ins[i].bytes.begin(), ins[i].bytes.end());
    n.inputs.push_back(g.add_const("in" + std::to_string(i), ins[i].dtype, ins[i].shape, std::move(b)));
  }
  for (int k = 0; k < n_out; ++k) {
    ir::Tensor t;
    t.name = "out" + std::to_string(k);
    n.outputs.push_back(g.add_tensor(std::move(t)));
  }
  if (attrs) attrs(n);
  SYSTOLIC_RETURN_IF_ERROR(passes::infer_node(g, n));
  std::vector<interp::TensorRef> in_refs, out_refs;
  for (int id : n.inputs) {
    if (id < 0) in_refs.push_back({});
    else in_refs.push_back({g.t(id).dtype, g.t(id).shape, g.t(id).data->data()});
  }
  std::vector<Val> outs;
  for (int id : n.outputs) outs.push_back(Val{g.t(id).dtype, g.t(id).shape, std::vector<uint8_t>(g.t(id).bytes())});
  for (Val& o : outs) out_refs.push_back({o.dtype, o.shape, o.bytes.data()});
  SYSTOLIC_RETURN_IF_ERROR(interp::eval_node(n, in_refs, out_refs));
  return outs;
}

Val run_ok(Op op, const std::vector<Val>& ins, const std::function<void(ir::Node&)>& attrs = {}) {
  auto r = run(op, ins, attrs);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? (*r)[0] : Val{};
}

// The error a node gives; it must name the node.
std::string error_of(Op op, const std::vector<Val>& ins, const std::function<void(ir::Node&)>& attrs = {}) {
  auto r = run(op, ins, attrs);
  EXPECT_FALSE(r.ok());
  if (r.ok()) return "";
  EXPECT_NE(r.status().message().find("node0"), std::string::npos) << r.status().message();
  return r.status().message();
}

auto axis(int64_t a) {
  return [a](ir::Node& n) { n.set_i("axis", a); };
}

#define EXPECT_HAS(msg, part) EXPECT_NE((msg).find(part), std::string::npos) << (msg)

}  // namespace

TEST(QuantOps, QuantizeRoundsHalfToEven) {
  Val y = run_ok(Op::QuantizeLinear, {f32({8}, {2.5f, 3.5f, -2.5f, -3.5f, 0.5f, 1.5f, -0.5f, 2.4999998f}),
                                      f32({}, {1.f}), i8({}, {0})});
  EXPECT_EQ(y.dtype, DType::i8);
  EXPECT_EQ(y.get<int8_t>(), (std::vector<int8_t>{2, 4, -2, -4, 0, 2, 0, 2}));
  // x / scale is the tie: 5 / 2 = 2.5 -> 2, 7 / 2 = 3.5 -> 4; the zero point is added after rounding.
  y = run_ok(Op::QuantizeLinear, {f32({3}, {5.f, 7.f, -5.f}), f32({}, {2.f}), u8({}, {10})});
  EXPECT_EQ(y.get<uint8_t>(), (std::vector<uint8_t>{12, 14, 8}));
}

TEST(QuantOps, QuantizeSaturates) {
  const float inf = INFINITY;
  Val y = run_ok(Op::QuantizeLinear, {f32({6}, {-20.f, 300.f, 245.5f, 244.5f, inf, -inf}), f32({}, {1.f}),
                                      u8({}, {10})});
  EXPECT_EQ(y.get<uint8_t>(), (std::vector<uint8_t>{0, 255, 255, 254, 255, 0}));
  y = run_ok(Op::QuantizeLinear, {f32({5}, {-200.f, 200.f, 127.5f, -128.5f, NAN}), f32({}, {1.f}), i8({}, {-1})});
  EXPECT_EQ(y.get<int8_t>(), (std::vector<int8_t>{-128, 127, 127, -128, -1}));
  // No zero point: uint8 with zero point 0.
  y = run_ok(Op::QuantizeLinear, {f32({3}, {-1.f, 1.5f, 300.f}), f32({1}, {1.f})});
  EXPECT_EQ(y.dtype, DType::u8);
  EXPECT_EQ(y.get<uint8_t>(), (std::vector<uint8_t>{0, 2, 255}));
  // int32 input.
  y = run_ok(Op::QuantizeLinear, {i32({3}, {5, -5, 1000}), f32({}, {2.f}), i8({}, {0})});
  EXPECT_EQ(y.get<int8_t>(), (std::vector<int8_t>{2, -2, 127}));
}

TEST(QuantOps, QuantizePerAxis) {
  // x [2,3,2], one scale and zero point per index of axis 1.
  const Val x = f32({2, 3, 2}, {1, 2, 4, 6, 8, 9, -1, -2, -4, -6, -8, -10});
  const Val s = f32({3}, {1.f, 2.f, 4.f});
  const Val z = u8({3}, {0, 10, 100});
  const std::vector<uint8_t> want{1, 2, 12, 13, 102, 102, 0, 0, 8, 7, 98, 98};
  EXPECT_EQ(run_ok(Op::QuantizeLinear, {x, s, z}, axis(1)).get<uint8_t>(), want);
  EXPECT_EQ(run_ok(Op::QuantizeLinear, {x, s, z}, axis(-2)).get<uint8_t>(), want);
  EXPECT_EQ(run_ok(Op::QuantizeLinear, {x, s, z}).get<uint8_t>(), want);  // axis defaults to 1
  // And back: (q - zp) * scale along the same axis.
  Val d = run_ok(Op::DequantizeLinear, {u8({2, 3, 2}, want), s, z}, axis(1));
  EXPECT_EQ(d.dtype, DType::f32);
  EXPECT_EQ(d.get<float>(), (std::vector<float>{1, 2, 4, 6, 8, 8, 0, 0, -4, -6, -8, -8}));
}

TEST(QuantOps, Dequantize) {
  Val d = run_ok(Op::DequantizeLinear, {i8({4}, {-128, -1, 0, 127}), f32({}, {0.5f}), i8({}, {-1})});
  EXPECT_EQ(d.get<float>(), (std::vector<float>{-63.5f, 0.f, 0.5f, 64.f}));
  d = run_ok(Op::DequantizeLinear, {i32({3}, {-1000000, 0, 7}), f32({}, {0.25f})});
  EXPECT_EQ(d.get<float>(), (std::vector<float>{-250000.f, 0.f, 1.75f}));
  EXPECT_HAS(error_of(Op::DequantizeLinear, {i32({2}, {1, 2}), f32({}, {1.f}), i32({}, {3})}), "must be 0");
}

TEST(QuantOps, DynamicQuantize) {
  // The ONNX operator documentation's example.
  auto r = run(Op::DynamicQuantizeLinear, {f32({6}, {0.f, 2.f, -3.f, -2.5f, 1.34f, 0.5f})}, {}, 3);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0].get<uint8_t>(), (std::vector<uint8_t>{153, 255, 0, 26, 221, 179}));
  EXPECT_EQ((*r)[1].shape, ir::Shape{});
  EXPECT_EQ((*r)[1].get<float>()[0], 5.f / 255.f);
  EXPECT_EQ((*r)[2].get<uint8_t>()[0], 153);
  // All zeros: scale 1, zero point 0 (no 0 / 0).
  r = run(Op::DynamicQuantizeLinear, {f32({2}, {0.f, 0.f})}, {}, 3);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)[0].get<uint8_t>(), (std::vector<uint8_t>{0, 0}));
  EXPECT_EQ((*r)[1].get<float>()[0], 1.f);
}

TEST(QuantOps, ConvIntegerMatchesTheOnnxExamples) {
  const Val x = u8({1, 1, 3, 3}, {2, 3, 4, 5, 6, 7, 8, 9, 10});
  const Val w = u8({1, 1, 2, 2}, {1, 1, 1, 1});
  Val y = run_ok(Op::ConvInteger, {x, w, u8({}, {1})});
  EXPECT_EQ(y.dtype, DType::i32);
  EXPECT_EQ(y.shape, (ir::Shape{1, 1, 2, 2}));
  EXPECT_EQ(y.get<int32_t>(), (std::vector<int32_t>{12, 16, 24, 28}));
  y = run_ok(Op::ConvInteger, {x, w, u8({}, {1})}, [](ir::Node& n) { n.set_ints("pads", {1, 1, 1, 1}); });
  EXPECT_EQ(y.get<int32_t>(), (std::vector<int32_t>{1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15, 7, 15, 17, 9}));
  // Per-channel weight zero points, stride 2, no input zero point.
  y = run_ok(Op::ConvInteger, {x, i8({2, 1, 1, 1}, {3, -3}), none(), i8({2}, {1, 0})},
             [](ir::Node& n) { n.set_ints("strides", {2, 2}); });
  EXPECT_EQ(y.get<int32_t>(), (std::vector<int32_t>{4, 8, 16, 20, -6, -12, -24, -30}));
}

TEST(QuantOps, QLinearConvPaddingReadsTheZeroPoint) {
  // x is 1 everywhere in real terms (q 4, zero point 3); a 3x3 all-ones kernel over a padded
  // image counts the taps inside it: 4 at corners, 6 on edges, 9 in the centre.
  const Val x = u8({1, 1, 3, 3}, std::vector<uint8_t>(9, 4));
  Val y = run_ok(Op::QLinearConv, {x, f32({}, {1.f}), u8({}, {3}), i8({1, 1, 3, 3}, std::vector<int8_t>(9, 1)),
                                   f32({}, {1.f}), i8({}, {0}), f32({}, {1.f}), u8({}, {0})},
                 [](ir::Node& n) { n.set_ints("pads", {1, 1, 1, 1}); });
  EXPECT_EQ(y.dtype, DType::u8);
  EXPECT_EQ(y.get<uint8_t>(), (std::vector<uint8_t>{4, 6, 4, 6, 9, 6, 4, 6, 4}));
}

TEST(QuantOps, QLinearConvGroupsPerChannelAndBias) {
  // Two groups of one channel; per-channel weight scales and zero points; int32 bias; y_scale 2.
  // channel 0: w 3 - zp 1 = 2, multiplier 1 * 0.5 / 2: (2x + 10) / 4 = (x + 5) / 2
  // channel 1: w -3 - zp 0, multiplier 1 * 1 / 2: (-3x - 1) / 2
  const Val x = u8({1, 2, 2, 2}, {1, 2, 3, 4, 1, 2, 3, 50});
  Val y = run_ok(Op::QLinearConv, {x, f32({}, {1.f}), u8({}, {0}), i8({2, 1, 1, 1}, {3, -3}), f32({2}, {0.5f, 1.f}),
                                   i8({2}, {1, 0}), f32({}, {2.f}), i8({}, {0}), i32({2}, {10, -1})},
                 [](ir::Node& n) { n.set_i("group", 2); });
  EXPECT_EQ(y.dtype, DType::i8);
  // 3, 3.5 -> 4, 4, 4.5 -> 4 | -2, -3.5 -> -4, -5, -75.5 -> -76
  EXPECT_EQ(y.get<int8_t>(), (std::vector<int8_t>{3, 4, 4, 4, -2, -4, -5, -76}));
  // Saturation at both ends of int8 through the output zero point.
  y = run_ok(Op::QLinearConv, {x, f32({}, {1.f}), u8({}, {0}), i8({2, 1, 1, 1}, {100, -100}), f32({}, {1.f}),
                               i8({}, {0}), f32({}, {1.f}), i8({}, {5})},
             [](ir::Node& n) { n.set_i("group", 2); });
  EXPECT_EQ(y.get<int8_t>(), (std::vector<int8_t>{105, 127, 127, 127, -95, -128, -128, -128}));
}

TEST(QuantOps, MatMulIntegerZeroPoints) {
  // The ONNX operator documentation's example.
  const Val a = u8({4, 3}, {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0});
  const Val b = u8({3, 2}, {1, 4, 2, 5, 3, 6});
  Val y = run_ok(Op::MatMulInteger, {a, b, u8({}, {12}), u8({}, {0})});
  EXPECT_EQ(y.dtype, DType::i32);
  EXPECT_EQ(y.get<int32_t>(), (std::vector<int32_t>{-38, -83, -44, -98, -50, -113, -56, -128}));
  // Per-row zero points of a, per-column ones of b, int8 a.
  // a - zp = [[1, 2], [-3, 0]], b - zp = [[1, -1], [2, 4]].
  y = run_ok(Op::MatMulInteger,
             {i8({2, 2}, {2, 3, -1, 2}), u8({2, 2}, {1, 2, 2, 7}), i8({2}, {1, 2}), u8({2}, {0, 3})});
  EXPECT_EQ(y.get<int32_t>(), (std::vector<int32_t>{5, 7, -3, 3}));
  // Batched, broadcast: a [2,1,2] x b [2,1].
  y = run_ok(Op::MatMulInteger, {u8({2, 1, 2}, {1, 2, 3, 4}), u8({2, 1}, {10, 20})});
  EXPECT_EQ(y.shape, (ir::Shape{2, 1, 1}));
  EXPECT_EQ(y.get<int32_t>(), (std::vector<int32_t>{50, 110}));
}

TEST(QuantOps, QLinearMatMulPerColumn) {
  // col 0: 2*1 + 4*3 = 14, multiplier 0.5 * 1 -> 7; col 1: 2*(2-1) + 4*(4-1) = 14, 0.5 * 0.25 -> 1.75 -> 2
  Val y = run_ok(Op::QLinearMatMul, {u8({1, 2}, {2, 4}), f32({}, {0.5f}), u8({}, {0}), i8({2, 2}, {1, 2, 3, 4}),
                                     f32({2}, {1.f, 0.25f}), i8({2}, {0, 1}), f32({}, {1.f}), u8({}, {0})});
  EXPECT_EQ(y.dtype, DType::u8);
  EXPECT_EQ(y.get<uint8_t>(), (std::vector<uint8_t>{7, 2}));
}

TEST(QuantShapes, BadParametersAreClearErrors) {
  const Val x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_HAS(error_of(Op::QuantizeLinear, {x, f32({2}, {1, 1}), u8({2}, {0, 0})}), "per-axis");
  EXPECT_HAS(error_of(Op::QuantizeLinear, {x, f32({3}, {1, 1, 1}), u8({2}, {0, 0})}, axis(1)), "must match");
  EXPECT_HAS(error_of(Op::QuantizeLinear, {x, f32({3}, {1, 1, 1}), u8({3}, {0, 0, 0})}, axis(2)), "out of range");
  EXPECT_HAS(error_of(Op::QuantizeLinear, {x, f32({}, {1.f}), u8({3}, {0, 0, 0})}), "zero point has shape");
  EXPECT_HAS(error_of(Op::QuantizeLinear, {x}), "y_scale is missing");
  EXPECT_HAS(error_of(Op::QuantizeLinear, {x, i32({}, {1})}), "float32 scale");
  EXPECT_HAS(error_of(Op::DequantizeLinear, {u8({2}, {1, 2}), f32({}, {1.f}), i8({}, {0})}), "must match");
  EXPECT_HAS(error_of(Op::QuantizeLinear, {x, f32({}, {1.f}), i32({}, {0})}), "uint8 or int8");
  // QLinearConv: per-channel weight scale of the wrong length, bias of the wrong type.
  const Val qx = u8({1, 2, 2, 2}, std::vector<uint8_t>(8, 1));
  const Val qw = i8({2, 2, 1, 1}, {1, 1, 1, 1});
  EXPECT_HAS(error_of(Op::QLinearConv, {qx, f32({}, {1.f}), u8({}, {0}), qw, f32({3}, {1, 1, 1}), i8({}, {0}),
                                        f32({}, {1.f}), u8({}, {0})}),
             "one value per output channel");
  EXPECT_HAS(error_of(Op::QLinearConv, {qx, f32({}, {1.f}), u8({}, {0}), qw, f32({}, {1.f}), i8({}, {0}),
                                        f32({}, {1.f}), u8({}, {0}), f32({2}, {0, 0})}),
             "int32");
  EXPECT_HAS(error_of(Op::QLinearConv, {qx, f32({}, {1.f}), i8({}, {0}), qw, f32({}, {1.f}), i8({}, {0}),
                                        f32({}, {1.f}), u8({}, {0})}),
             "must match");
  EXPECT_HAS(error_of(Op::QLinearConv, {qx, f32({}, {1.f}), u8({}, {0}), qw}), "w_scale is missing");
  // QLinearMatMul: b's scale per column, its zero point per tensor; a's scale neither.
  const Val a = u8({2, 2}, {1, 2, 3, 4});
  const Val b = u8({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_HAS(error_of(Op::QLinearMatMul, {a, f32({}, {1.f}), u8({}, {0}), b, f32({3}, {1, 1, 1}), u8({}, {0}),
                                          f32({}, {1.f}), u8({}, {0})}),
             "same quantization");
  EXPECT_HAS(error_of(Op::QLinearMatMul, {a, f32({3}, {1, 1, 1}), u8({3}, {0, 0, 0}), b, f32({}, {1.f}),
                                          u8({}, {0}), f32({}, {1.f}), u8({}, {0})}),
             "per row");
  EXPECT_HAS(error_of(Op::MatMulInteger, {a, b, u8({}, {0}), i8({}, {0})}), "must match");
  EXPECT_HAS(error_of(Op::MatMulInteger, {a, u8({3, 2}, {1, 2, 3, 4, 5, 6})}), "inner dimensions");
}

TEST(QuantOps, ReduceMinMaxAndRound) {
  const Val x = f32({2, 3}, {1, -2, 3, -4, 5, NAN});
  Val y = run_ok(Op::ReduceMin, {x}, [](ir::Node& n) { n.set_ints("axes", {1}); });
  EXPECT_EQ(y.shape, (ir::Shape{2, 1}));
  EXPECT_EQ(y.get<float>()[0], -2.f);
  EXPECT_TRUE(std::isnan(y.get<float>()[1]));
  y = run_ok(Op::ReduceMax, {i32({2, 3}, {1, -2, 3, -4, 5, 0})}, [](ir::Node& n) {
    n.set_ints("axes", {0});
    n.set_i("keepdims", 0);
  });
  EXPECT_EQ(y.get<int32_t>(), (std::vector<int32_t>{1, 5, 3}));
  // Opset 18: axes as an input; none given and noop_with_empty_axes: the input unchanged.
  y = run_ok(Op::ReduceMax, {i32({2, 3}, {1, -2, 3, -4, 5, 0}), make(DType::i64, {1}, std::vector<int64_t>{-1})},
             [](ir::Node& n) { n.set_i("axes_as_input", 1); });
  EXPECT_EQ(y.get<int32_t>(), (std::vector<int32_t>{3, 5}));
  y = run_ok(Op::ReduceMin, {x}, [](ir::Node& n) {
    n.set_i("axes_as_input", 1);
    n.set_i("noop_with_empty_axes", 1);
  });
  EXPECT_EQ(y.shape, (ir::Shape{2, 3}));
  EXPECT_HAS(error_of(Op::ReduceMin, {x}, [](ir::Node& n) { n.set_ints("axes", {2}); }), "out of range");

  y = run_ok(Op::Max, {f32({2, 1}, {1, 7}), f32({3}, {0, 5, NAN}), f32({}, {2})});
  EXPECT_EQ(y.shape, (ir::Shape{2, 3}));
  const auto m = y.get<float>();
  EXPECT_EQ(m[0], 2.f);
  EXPECT_EQ(m[1], 5.f);
  EXPECT_TRUE(std::isnan(m[2]));
  EXPECT_EQ(m[3], 7.f);
  EXPECT_EQ(run_ok(Op::Min, {u8({3}, {1, 200, 3}), u8({1}, {100})}).get<uint8_t>(), (std::vector<uint8_t>{1, 100, 3}));
  EXPECT_HAS(error_of(Op::Min, {u8({3}, {1, 2, 3}), i8({1}, {1})}), "differ");

  y = run_ok(Op::Round, {f32({7}, {2.5f, 3.5f, -2.5f, 0.5f, -1.5f, 1.4999999f, 1e30f})});
  EXPECT_EQ(y.get<float>(), (std::vector<float>{2.f, 4.f, -2.f, 0.f, -2.f, 1.f, 1e30f}));
  EXPECT_HAS(error_of(Op::Round, {i32({1}, {1})}), "not supported");
}

// QuantizeLinear -> DequantizeLinear through the compiler (both pipelines) and a Session;
// a constant QuantizeLinear is folded away.
TEST(QuantOps, CompiledQuantizeDequantize) {
  for (bool optimize : {false, true}) {
    GraphBuilder b;
    const int x = b.input("x", {1, 2, 2, 2});
    const int s = b.g.add_const_f32("s", {2}, {0.5f, 2.f});
    AlignedBytes zb{128, 0};
    const int z = b.g.add_const("z", DType::u8, {2}, zb);
    const int q = b.node(Op::QuantizeLinear, {x, s, z})[0];
    const int d = b.node(Op::DequantizeLinear, {q, s, z})[0];
    b.output(d);
    plan::CompileOptions co;
    co.optimize = optimize;
    auto p = plan::compile(b.g, co);
    ASSERT_TRUE(p.ok()) << p.status().message();
    EXPECT_EQ(count_ops((*p)->graph, Op::Reorder), 0);
    auto session = runtime::Session::create(*p, runtime::SessionOptions{});
    ASSERT_TRUE(session.ok()) << session.status().message();
    runtime::HostTensor in = runtime::HostTensor::zeros(DType::f32, {1, 2, 2, 2});
    const std::vector<float> xs{0.2f, 0.25f, -0.75f, 100.f, 1.f, 3.f, -1.f, 600.f};
    std::memcpy(in.data.data(), xs.data(), 32);
    std::vector<runtime::HostTensor> outs;
    Status st = (*session)->run({{"x", in}}, &outs);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(outs.size(), 1u);
    // channel 0: scale 0.5, zp 128 (0.25 / 0.5 = 0.5 -> 0; -0.75 / 0.5 = -1.5 -> -2; 200 + 128 saturates)
    // channel 1: scale 2, zp 0 (3 / 2 = 1.5 -> 2; -1 -> -0.5 -> 0; 300 saturates at 255)
    const std::vector<float> want{0.f, 0.f, -1.f, 63.5f, 0.f, 4.f, 0.f, 510.f};
    EXPECT_EQ(std::vector<float>(outs[0].as<float>(), outs[0].as<float>() + 8), want) << "optimize=" << optimize;
  }
  GraphBuilder b;
  const int x = b.input("x", {2});
  const int c = b.g.add_const_f32("c", {2}, {1.f, -3.f});
  const int q = b.node(Op::QuantizeLinear, {c, b.g.add_const_f32("s", {}, {1.f})})[0];
  const int d = b.node(Op::DequantizeLinear, {q, b.g.add_const_f32("s2", {}, {1.f})})[0];
  b.output(b.node(Op::Add, {x, d})[0]);
  auto p = plan::compile(b.g, plan::CompileOptions{});
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(count_ops((*p)->graph, Op::QuantizeLinear), 0);
  EXPECT_EQ(count_ops((*p)->graph, Op::DequantizeLinear), 0);
}

// QLinearConv on a 4-D uint8 image stays in the plain layout through the optimizing pipeline.
TEST(QuantOps, QLinearConvCompiledStaysPlain) {
  GraphBuilder b;
  const int x = b.input("x", {1, 1, 3, 3}, DType::u8);
  auto cst = [&](const std::string& name, DType dt, ir::Shape s, std::vector<uint8_t> v) {
    return b.g.add_const(name, dt, std::move(s), AlignedBytes(v.begin(), v.end()));
  };
  const int one = b.g.add_const_f32("one", {}, {1.f});
  const int w = cst("w", DType::i8, {1, 1, 3, 3}, std::vector<uint8_t>(9, 1));
  const int xz = cst("xz", DType::u8, {}, {3}), wz = cst("wz", DType::i8, {}, {0}), yz = cst("yz", DType::u8, {}, {0});
  const int y = b.node(Op::QLinearConv, {x, one, xz, w, one, wz, one, yz})[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  b.output(y);
  auto p = plan::compile(b.g, plan::CompileOptions{});
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(count_ops((*p)->graph, Op::Reorder), 0);
  for (const ir::Tensor& t : (*p)->graph.tensors) EXPECT_EQ(t.layout, ir::Layout::plain) << t.name;
  auto session = runtime::Session::create(*p, runtime::SessionOptions{});
  ASSERT_TRUE(session.ok()) << session.status().message();
  runtime::HostTensor in = runtime::HostTensor::zeros(DType::u8, {1, 1, 3, 3});
  std::fill(in.data.begin(), in.data.end(), 4);
  std::vector<runtime::HostTensor> outs;
  ASSERT_TRUE((*session)->run({{"x", in}}, &outs).ok());
  EXPECT_EQ(outs[0].data, (std::vector<uint8_t>{4, 6, 4, 6, 9, 6, 4, 6, 4}));
}

}  // namespace systolic::testing
