// Session: wrong input names, shapes, dtypes and missing inputs are clear errors; threads
// do not change results; inputs given as rows run as the whole tensor does.
#include <gtest/gtest.h>

#include "tests/graph_builder.h"

namespace systolic::testing {
namespace {

std::unique_ptr<runtime::Session> make_session(int threads = 1, int64_t batch = 2, int64_t micro_batch = 0) {
  GraphBuilder b;
  const int x = b.input("image", {-1, 3, 16, 16});
  const int c = b.node(ir::Op::Conv, {x, b.weights("w", {32, 3, 3, 3})})[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  const int r = b.node(ir::Op::Relu, {c})[0];
  b.output(r);
  plan::CompileOptions co;
  co.batch = batch;
  co.micro_batch = micro_batch;
  auto p = plan::compile(b.g, co);
  EXPECT_TRUE(p.ok()) << p.status().message();
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

// run_rows: rows scattered in memory (a server's requests) give run_into's bytes, whole and
// as micro-batches, on one thread and on a pool (rows of 3 KB: 192 KB copies in slices); a null
// row reads as zeros; one row is the whole input; counts that do not cut the input are errors
// naming it.
TEST(Session, RowsRunAsTheWholeInput) {
  for (const auto& [threads, micro] : {std::pair{1, 0}, std::pair{2, 0}, std::pair{2, 2}, std::pair{1, 4}}) {
    SCOPED_TRACE("threads " + std::to_string(threads) + ", micro-batch " + std::to_string(micro));
    auto s = make_session(threads, 64, micro);
    // Finite floats of scattered bits (every byte below 0x40).
    std::vector<uint8_t> in(64 * 3 * 16 * 16 * 4);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>((i * 2654435761u) >> 24 & 0x3f);
    const std::size_t row = in.size() / 64, out_bytes = s->outputs()[0].bytes();
    std::vector<uint8_t> want(out_bytes), got(out_bytes, 0xff);
    ASSERT_TRUE(s->run_into({in.data()}, {want.data()}).ok());
    // Each row copied to its own allocation, in reverse order of address.
    std::vector<std::vector<uint8_t>> copies(64);
    std::vector<const void*> rows(64);
    for (int r = 63; r >= 0; --r) {
      copies[r].assign(in.begin() + r * row, in.begin() + (r + 1) * row);
      rows[r] = copies[r].data();
    }
    ASSERT_TRUE(s->run_rows({rows}, {got.data()}).ok());
    EXPECT_EQ(got, want);

    // Rows 5 and 63 null: as zeros in the whole tensor.
    std::fill(in.begin() + 5 * row, in.begin() + 6 * row, 0);
    std::fill(in.begin() + 63 * row, in.end(), 0);
    ASSERT_TRUE(s->run_into({in.data()}, {want.data()}).ok());
    rows[5] = rows[63] = nullptr;
    ASSERT_TRUE(s->run_rows({rows}, {got.data()}).ok());
    EXPECT_EQ(got, want);

    // One row is the whole input, micro-batched or not (a fixed-batch model's one request).
    ASSERT_TRUE(s->run_rows({{in.data()}}, {got.data()}).ok());
    EXPECT_EQ(got, want);

    Status st = s->run_rows({std::vector<const void*>(63, rows[0])}, {got.data()});
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("input 'image' (float32[64,3,16,16]) cannot be cut into 63 rows"), std::string::npos)
        << st.message();
    st = s->run_rows({}, {got.data()});
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("the model has 1 inputs; got rows for 0"), std::string::npos) << st.message();
    st = s->run_rows({rows}, {nullptr});
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("is a null buffer"), std::string::npos) << st.message();
  }
}

}  // namespace systolic::testing
