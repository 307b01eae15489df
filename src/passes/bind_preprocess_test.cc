// bind_preprocess: the float image input becomes a uint8 NHWC image plus NormalizeImage, with
// the same results as normalising by hand; bad requests are clear errors.
#include <gtest/gtest.h>

#include "tests/graph_builder.h"

namespace systolic::testing {
namespace {

ir::Graph conv_model(ir::Shape in_shape) {
  GraphBuilder b;
  const int x = b.input("image", std::move(in_shape));
  const int c = b.node(ir::Op::Conv, {x, b.weights("w", {4, 3, 3, 3}), b.weights("bias", {4})})[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  b.output(c);
  return b.g;
}

Status bind(ir::Graph& g, ir::ImagePreprocess pre, passes::PassContext* out = nullptr) {
  passes::PassContext ctx;
  ctx.preprocess = std::move(pre);
  Status st = passes::bind_preprocess(g, ctx);
  if (out) *out = ctx;
  return st;
}

}  // namespace

TEST(BindPreprocess, ImageInputAndResolvedSizes) {
  ir::Graph g = conv_model({1, 3, 20, 24});
  passes::PassContext ctx;
  ASSERT_TRUE(bind(g, ir::imagenet_preprocess(), &ctx).ok());
  ASSERT_TRUE(ir::verify(g).ok());
  const ir::Tensor& in = g.t(g.inputs[0]);
  EXPECT_EQ(in.name, "image");  // the model's input name stays
  EXPECT_EQ(in.dtype, ir::DType::u8);
  EXPECT_EQ(in.layout, ir::Layout::nhwc);
  EXPECT_EQ(in.shape, (ir::Shape{1, 3, 20, 24}));
  ASSERT_EQ(g.nodes[0].op, ir::Op::NormalizeImage);
  EXPECT_EQ(ctx.preprocess.crop_h, 20);
  EXPECT_EQ(ctx.preprocess.crop_w, 24);
  EXPECT_EQ(ctx.preprocess.resize, 27);  // round(24 / 0.875): any image fits the crop
}

TEST(BindPreprocess, SymbolicSizesTakeTheCrop) {
  ir::Graph g = conv_model({-1, 3, -1, -1});
  ir::ImagePreprocess pre = ir::imagenet_preprocess();
  pre.crop_h = pre.crop_w = 224;
  passes::PassContext ctx;
  ASSERT_TRUE(bind(g, pre, &ctx).ok());
  EXPECT_EQ(g.t(g.inputs[0]).shape, (ir::Shape{-1, 3, 224, 224}));
  EXPECT_EQ(ctx.preprocess.resize, 256);
}

TEST(BindPreprocess, RejectsWhatCannotWork) {
  auto msg = [](ir::Graph g, ir::ImagePreprocess pre) { return bind(g, pre).message(); };
  ir::ImagePreprocess pre = ir::imagenet_preprocess();
  EXPECT_NE(msg(conv_model({1, 3, -1, -1}), pre).find("symbolic"), std::string::npos);
  ir::ImagePreprocess big = pre;
  big.crop_h = big.crop_w = 32;
  EXPECT_NE(msg(conv_model({1, 3, 20, 20}), big).find("crop to the model's size"), std::string::npos);
  ir::ImagePreprocess small_resize = pre;
  small_resize.resize = 10;
  EXPECT_NE(msg(conv_model({1, 3, 20, 20}), small_resize).find("does not fit"), std::string::npos);
  ir::ImagePreprocess bad_std = pre;
  bad_std.std[1] = 0.f;
  EXPECT_NE(msg(conv_model({1, 3, 20, 20}), bad_std).find("positive"), std::string::npos);
  GraphBuilder b;
  const int x = b.input("x", {1, 4, 8, 8});
  b.output(b.node(ir::Op::Relu, {x})[0]);
  EXPECT_NE(msg(b.g, pre).find("4 channels"), std::string::npos);
}

// The NormalizeImage node computes (u / 255 - mean) / std into NCHW: the reference compile of the
// bound graph on an image equals the original graph on the image normalised here.
TEST(BindPreprocess, ReferenceMatchesHandNormalisation) {
  const ir::Graph model = conv_model({2, 3, 7, 9});
  plan::CompileOptions co;
  co.optimize = false;
  co.preprocess = ir::imagenet_preprocess();
  auto with = plan::compile(model, co);
  ASSERT_TRUE(with.ok()) << with.status().message();
  co.preprocess = {};
  auto without = plan::compile(model, co);
  ASSERT_TRUE(without.ok());
  std::mt19937 rng(3);
  runtime::HostTensor img = runtime::HostTensor::zeros(ir::DType::u8, {2, 7, 9, 3});
  for (auto& v : img.data) v = static_cast<uint8_t>(rng() & 255);
  runtime::HostTensor x = runtime::HostTensor::zeros(ir::DType::f32, {2, 3, 7, 9});
  const ir::ImagePreprocess pre = ir::imagenet_preprocess();
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int q = 0; q < 63; ++q)
        x.as<float>()[(n * 3 + c) * 63 + q] = (img.data[(n * 63 + q) * 3 + c] / 255.f - pre.mean[c]) / pre.std[c];
  auto a = runtime::Session::create(*with);
  auto b = runtime::Session::create(*without);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)->inputs()[0].shape, (ir::Shape{2, 7, 9, 3}));  // given as stored: NHWC
  std::vector<runtime::HostTensor> oa, ob;
  ASSERT_TRUE((*a)->run({{"image", img}}, &oa).ok());
  ASSERT_TRUE((*b)->run({{"image", x}}, &ob).ok());
  std::vector<float> va(oa[0].as<float>(), oa[0].as<float>() + oa[0].numel());
  std::vector<float> vb(ob[0].as<float>(), ob[0].as<float>() + ob[0].numel());
  EXPECT_LT(max_rel_error(va, vb), 1e-5);
  // A float tensor where the image goes is refused, naming what is expected.
  std::vector<runtime::HostTensor> oc;
  Status st = (*a)->run({{"image", x}}, &oc);
  EXPECT_NE(st.message().find("expected uint8[2,7,9,3]"), std::string::npos) << st.message();
}

}  // namespace systolic::testing
