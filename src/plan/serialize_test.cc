// The plan file: a round trip runs identically; other versions and damaged files are refused.
#include <gtest/gtest.h>

#include "tests/graph_builder.h"

namespace systolic::testing {
namespace {

ir::Graph small_net() {
  GraphBuilder b;
  const int x = b.input("x", {1, 3, 12, 12});
  const int c = b.node(ir::Op::Conv, {x, b.weights("w", {8, 3, 3, 3}), b.weights("b", {8})})[0];
  const int r = b.node(ir::Op::Relu, {c})[0];
  const int p = b.node(ir::Op::GlobalAveragePool, {r})[0];
  const int f = b.node(ir::Op::Flatten, {p})[0];
  b.output(f);
  return b.g;
}

std::vector<float> run_program(std::shared_ptr<const plan::Program> p) {
  auto s = runtime::Session::create(p);
  EXPECT_TRUE(s.ok()) << s.status().message();
  std::vector<std::pair<std::string, runtime::HostTensor>> ins;
  ins.emplace_back("x", random_input(p->graph.t(p->graph.inputs[0]), 3));
  std::vector<runtime::HostTensor> outs;
  EXPECT_TRUE((*s)->run(ins, &outs).ok());
  return std::vector<float>(outs[0].as<float>(), outs[0].as<float>() + outs[0].numel());
}

}  // namespace

TEST(PlanFile, RoundTripRunsTheSame) {
  auto p = plan::compile(small_net(), plan::CompileOptions{});
  ASSERT_TRUE(p.ok()) << p.status().message();
  const std::string bytes = plan::serialize_program(**p);
  auto q = plan::load_program_bytes(bytes);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(plan::serialize_program(**q), bytes);
  EXPECT_EQ(run_program(*p), run_program(*q));
}

// Kernels read packed weights with full-line vector loads: every constant starts on a cache
// line, compiled or loaded from a file.
TEST(PlanFile, ConstantsStartOnCacheLines) {
  auto p = plan::compile(small_net(), plan::CompileOptions{});
  ASSERT_TRUE(p.ok()) << p.status().message();
  auto q = plan::load_program_bytes(plan::serialize_program(**p));
  ASSERT_TRUE(q.ok()) << q.status().message();
  int consts = 0;
  for (const auto* prog : {p->get(), q->get()})
    for (const ir::Tensor& t : prog->graph.tensors)
      if (t.is_const() && !t.data->empty()) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data->data()) % 64, 0u) << t.name;
        ++consts;
      }
  EXPECT_GE(consts, 4);  // packed weights and bias, in both programs
}

// A plan whose batch runs as micro-batches keeps both numbers; its session takes the whole
// batch and gives what the whole-batch plan gives.
TEST(PlanFile, KeepsTheMicroBatch) {
  ir::Graph g = small_net();
  g.t(g.inputs[0]).shape[0] = -1;  // a symbolic batch
  plan::CompileOptions co;
  co.batch = 4;
  std::vector<std::vector<float>> outs;
  for (int64_t micro : {4, 2}) {
    co.micro_batch = micro;
    auto p = plan::compile(g, co);
    ASSERT_TRUE(p.ok()) << p.status().message();
    auto q = plan::load_program_bytes(plan::serialize_program(**p));
    ASSERT_TRUE(q.ok()) << q.status().message();
    EXPECT_EQ((*q)->batch, 4);
    EXPECT_EQ((*q)->micro_batch, micro);
    EXPECT_EQ(plan::runs_per_batch(**q), 4 / micro);
    auto s = runtime::Session::create(*q);
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ((*s)->inputs()[0].shape, (ir::Shape{4, 3, 12, 12}));
    EXPECT_EQ((*s)->outputs()[0].shape, (ir::Shape{4, 8}));
    ir::Tensor whole = (*q)->graph.t((*q)->graph.inputs[0]);
    whole.shape = (*s)->inputs()[0].shape;
    std::vector<std::pair<std::string, runtime::HostTensor>> ins;
    ins.emplace_back("x", random_input(whole, 3));
    std::vector<runtime::HostTensor> res;
    ASSERT_TRUE((*s)->run(ins, &res).ok());
    ASSERT_EQ(res[0].shape, (ir::Shape{4, 8}));
    outs.emplace_back(res[0].as<float>(), res[0].as<float>() + res[0].numel());
  }
  for (std::size_t i = 0; i < outs[0].size(); ++i) EXPECT_NEAR(outs[1][i], outs[0][i], 1e-5f) << i;
}

TEST(PlanFile, KeepsImagePreprocessing) {
  plan::CompileOptions co;
  co.preprocess = ir::imagenet_preprocess();
  co.preprocess.resize = 14;
  auto p = plan::compile(small_net(), co);
  ASSERT_TRUE(p.ok()) << p.status().message();
  auto q = plan::load_program_bytes(plan::serialize_program(**p));
  ASSERT_TRUE(q.ok()) << q.status().message();
  const ir::ImagePreprocess& pre = (*q)->preprocess;
  EXPECT_EQ(pre.resize, 14);
  EXPECT_EQ(pre.crop_h, 12);
  EXPECT_EQ(pre.crop_w, 12);
  EXPECT_EQ(pre.mean, co.preprocess.mean);
  EXPECT_EQ(pre.std, co.preprocess.std);
  EXPECT_EQ((*q)->graph.t((*q)->graph.inputs[0]).dtype, ir::DType::u8);
}

TEST(PlanFile, RefusesOtherVersionsAndDamage) {
  auto p = plan::compile(small_net(), plan::CompileOptions{});
  ASSERT_TRUE(p.ok());
  std::string bytes = plan::serialize_program(**p);
  std::string other = bytes;
  for (uint32_t version : {plan::kPlanVersion + 1, plan::kOldestPlanVersion - 1}) {
    other[8] = static_cast<char>(version);
    auto v = plan::load_program_bytes(other);
    ASSERT_FALSE(v.ok()) << version;
    EXPECT_NE(v.status().message().find("version"), std::string::npos);
  }
  for (std::size_t cut : {std::size_t{4}, bytes.size() / 3, bytes.size() - 1}) {
    auto t = plan::load_program_bytes(bytes.substr(0, cut));
    EXPECT_FALSE(t.ok()) << cut;
  }
  auto g = plan::load_program_bytes("SYSTPLAN garbage garbage garbage");
  EXPECT_FALSE(g.ok());
  // One flipped bit anywhere in the body (here: in the packed weights) is caught.
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x10;
  auto f = plan::load_program_bytes(flipped);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("corrupt"), std::string::npos);
}

TEST(PlanFile, RefusesPlanForMissingInstructionSet) {
  auto p = plan::compile(small_net(), plan::CompileOptions{});
  ASSERT_TRUE(p.ok());
  plan::Program q = **p;
  q.isa = "avx512";
  CpuFeatures none = cap_isa(host_cpu(), "ref");
  Status st = plan::check_runnable(q, none);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("recompile"), std::string::npos);
}

}  // namespace systolic::testing
