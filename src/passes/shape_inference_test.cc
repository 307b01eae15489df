// shape_inference: conv/pool output sizes (pads, strides, dilation, auto_pad, ceil_mode)
// and clear errors for shapes that do not fit.
#include <gtest/gtest.h>

#include "tests/graph_builder.h"

namespace systolic::testing {

TEST(ShapeInference, ConvAndPoolGeometry) {
  GraphBuilder b;
  const int x = b.input("x", {1, 3, 224, 224});
  const int c = b.node(ir::Op::Conv, {x, b.weights("w", {64, 3, 7, 7})})[0];
  b.last().set_ints("strides", {2, 2});
  b.last().set_ints("pads", {3, 3, 3, 3});
  const int p = b.node(ir::Op::MaxPool, {c})[0];
  b.last().set_ints("kernel_shape", {3, 3});
  b.last().set_ints("strides", {2, 2});
  b.last().set_ints("pads", {1, 1, 1, 1});
  const int same = b.node(ir::Op::Conv, {p, b.weights("w2", {8, 64, 3, 3})})[0];
  ir::Attr ap;
  ap.kind = ir::Attr::s;
  ap.str_v = "SAME_UPPER";
  b.last().attrs["auto_pad"] = ap;
  b.last().set_ints("strides", {2, 2});
  const int ceil = b.node(ir::Op::AveragePool, {same})[0];
  b.last().set_ints("kernel_shape", {3, 3});
  b.last().set_ints("strides", {2, 2});
  b.last().set_i("ceil_mode", 1);
  b.output(ceil);
  run_passes(b.g, {passes::shape_inference});
  EXPECT_EQ(b.g.t(c).shape, (ir::Shape{1, 64, 112, 112}));
  EXPECT_EQ(b.g.t(p).shape, (ir::Shape{1, 64, 56, 56}));
  EXPECT_EQ(b.g.t(same).shape, (ir::Shape{1, 8, 28, 28}));
  EXPECT_EQ(b.g.t(ceil).shape, (ir::Shape{1, 8, 14, 14}));  // ceil((28-3)/2)+1
}

TEST(ShapeInference, RejectsMismatchedShapes) {
  GraphBuilder b;
  const int x = b.input("x", {1, 3, 8, 8});
  const int y = b.node(ir::Op::Conv, {x, b.weights("w", {4, 5, 3, 3})})[0];
  b.output(y);
  passes::PassContext ctx;
  Status st = passes::shape_inference(b.g, ctx);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("do not agree"), std::string::npos) << st.message();

  GraphBuilder c;
  const int a = c.input("a", {2, 3});
  const int d = c.input("d", {4, 3});
  const int z = c.node(ir::Op::Add, {a, d})[0];
  c.output(z);
  st = passes::shape_inference(c.g, ctx);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("do not broadcast"), std::string::npos) << st.message();

  // Conv packs and reads float32 weights: an int16 weight is refused, not read as floats.
  GraphBuilder e;
  const int ex = e.input("x", {1, 3, 8, 8});
  const int w16 = e.weights("w", {4, 3, 1, 1});
  e.g.t(w16).dtype = ir::DType::i16;
  e.output(e.node(ir::Op::Conv, {ex, w16})[0]);
  st = passes::shape_inference(e.g, ctx);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("float32 is supported"), std::string::npos) << st.message();
}

}  // namespace systolic::testing

namespace systolic::testing {

TEST(ShapeInference, ABatchNeedsASymbolicLeadingDimension) {
  GraphBuilder fixed;
  fixed.output(fixed.node(ir::Op::Relu, {fixed.input("x", {1, 3, 8, 8})})[0]);
  passes::PassContext ctx;
  ctx.batch = 4;
  Status st = passes::bind_input_shapes(fixed.g, ctx);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("batch dimension is fixed"), std::string::npos) << st.message();
  ctx.batch = 1;
  EXPECT_TRUE(passes::bind_input_shapes(fixed.g, ctx).ok());
  GraphBuilder four;  // a fixed batch that is the one asked for
  four.output(four.node(ir::Op::Relu, {four.input("x", {4, 3, 8, 8})})[0]);
  ctx.batch = 4;
  EXPECT_TRUE(passes::bind_input_shapes(four.g, ctx).ok());
  GraphBuilder sym;
  const int x = sym.input("x", {-1, 3, 8, 8});
  sym.output(sym.node(ir::Op::Relu, {x})[0]);
  ctx.batch = 4;
  ASSERT_TRUE(passes::bind_input_shapes(sym.g, ctx).ok());
  EXPECT_EQ(sym.g.t(x).shape, (ir::Shape{4, 3, 8, 8}));
}

}  // namespace systolic::testing
