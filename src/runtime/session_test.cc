// Session: wrong input names, shapes, dtypes and missing inputs are clear errors; threads
// do not change results.
#include <gtest/gtest.h>

#include "tests/graph_builder.h"

namespace systolic::testing {
namespace {

std::unique_ptr<runtime::Session> make_session(int threads = 1) {
  GraphBuilder b;
  const int x = b.input("image", {2, 3, 16, 16});
  const int c = b.node(ir::Op::Conv, {x, b.weights("w", {32, 3, 3, 3})})[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  const int r = b.node(ir::Op::Relu, {c})[0];
  b.output(r);
  auto p = plan::compile(b.g, plan::CompileOptions{});
  EXPECT_TRUE(p.ok());
  runtime::SessionOptions so;
  so.threads = threads;
  auto s = runtime::Session::create(*p, so);
  EXPECT_TRUE(s.ok());
  return std::move(*s);
}

}  // namespace

TEST(Session, BadInputsAreClearErrors) {
  auto s = make_session();
  std::vector<runtime::HostTensor> outs;
  auto good = runtime::HostTensor::zeros(ir::DType::f32, {2, 3, 16, 16});
  ASSERT_TRUE(s->run({{"image", good}}, &outs).ok());

  Status st = s->run({{"img", good}}, &outs);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("no input named 'img'"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("image"), std::string::npos);

  st = s->run({{"image", runtime::HostTensor::zeros(ir::DType::f32, {1, 3, 16, 16})}}, &outs);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("expected float32[2,3,16,16]"), std::string::npos) << st.message();

  st = s->run({{"image", runtime::HostTensor::zeros(ir::DType::i64, {2, 3, 16, 16})}}, &outs);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("int64"), std::string::npos) << st.message();

  st = s->run({}, &outs);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("was not given"), std::string::npos) << st.message();
}

TEST(Session, ThreadsGiveTheSameResult) {
  auto one = make_session(1), two = make_session(2);
  auto in = random_input(one->program().graph.t(one->program().graph.inputs[0]), 5);
  std::vector<runtime::HostTensor> a, b;
  ASSERT_TRUE(one->run({{"image", in}}, &a).ok());
  ASSERT_TRUE(two->run({{"image", in}}, &b).ok());
  EXPECT_EQ(a[0].data, b[0].data);
}

}  // namespace systolic::testing
