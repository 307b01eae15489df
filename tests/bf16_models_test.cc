// Whole zoo models in bf16: the logits against the fp32 plan's (cosine >= 0.999, the precision's
// gate) and against a bf16 reference execution: the interpreter on the graph as lower_bf16 leaves
// it (reference convs that round their inputs and weights themselves and sum in double).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>

#include "frontend/onnx/import.h"
#include "tests/graph_builder.h"
#include "tools/zoo/zoo.h"

namespace systolic::testing {
namespace {

ir::Graph zoo_graph(const std::string& name) {
  onnx::ModelProto m;
  EXPECT_TRUE(zoo::zoo_build(name, 0, &m).ok());
  auto g = frontend::import_onnx_bytes(m.SerializeAsString(), ".");
  EXPECT_TRUE(g.ok()) << g.status().message();
  return std::move(*g);
}

std::vector<float> run(std::shared_ptr<const plan::Program> p, const runtime::HostTensor& x) {
  auto s = runtime::Session::create(p);
  EXPECT_TRUE(s.ok()) << s.status().message();
  std::vector<runtime::HostTensor> outs;
  const Status st = (*s)->run({{"input", x}}, &outs);
  EXPECT_TRUE(st.ok()) << st.message();
  return std::vector<float>(outs[0].as<float>(), outs[0].as<float>() + outs[0].numel());
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
  return ab / std::sqrt(aa * bb);
}

struct Case {
  const char* model;
  bool reference;  // also run the (slow) interpreted bf16 reference
};

class ZooBf16 : public ::testing::TestWithParam<Case> {};

TEST_P(ZooBf16, LogitsNearFp32AndBf16Reference) {
  const Case c = GetParam();
  const ir::Graph g = zoo_graph(c.model);
  ir::Tensor in;
  in.dtype = ir::DType::f32;
  in.shape = {2, 3, 224, 224};
  const runtime::HostTensor x = random_input(in, 11);
  plan::CompileOptions co;
  co.batch = 2;
  auto fp32 = plan::compile(g, co);
  ASSERT_TRUE(fp32.ok()) << fp32.status().message();
  co.precision = passes::Precision::bf16;
  ir::Graph lowered;
  auto bf16 = plan::compile(g, co, [&](const char* pass, const ir::Graph& pg) {
    if (c.reference && std::string(pass) == "lower_bf16") lowered = pg;
  });
  ASSERT_TRUE(bf16.ok()) << bf16.status().message();
  EXPECT_EQ((*bf16)->precision, "bf16");
  const auto want32 = run(*fp32, x), got = run(*bf16, x);
  ASSERT_EQ(got.size(), 2000u);
  const double cos32 = cosine(got, want32);
  std::printf("%s: bf16 vs fp32 logits: cosine %.6f, max relative error %.3g\n", c.model, cos32,
              max_rel_error(got, want32));
  EXPECT_GE(cos32, 0.999);
  EXPECT_LT(cos32, 1.0 - 1e-9) << "the plan computed fp32";
  if (!c.reference) return;
  passes::PassContext ctx;
  ASSERT_TRUE(passes::memory_plan(lowered, ctx).ok());
  auto ref = std::make_shared<plan::Program>();
  ref->graph = std::move(lowered);
  ref->optimized = false;
  ref->isa = "ref";
  const auto want16 = run(ref, x);
  const double cos16 = cosine(got, want16), err16 = max_rel_error(got, want16);
  std::printf("%s: bf16 vs bf16 reference: cosine %.8f, max relative error %.3g\n", c.model, cos16, err16);
  // The plan's fp32 sums differ from the reference's double ones by a few ulp. Where that moves a
  // value across a bf16 rounding boundary the two differ by a whole bf16 step, which moves more
  // values across boundaries in the next layers: two bf16 executions drift apart over depth to
  // a fair fraction of the distance to fp32 (also between the AVX2 and the reference kernels,
  // both in fp32). Measured here: 1 - cosine 5-7x below that to fp32.
  EXPECT_GE(cos16, 0.99999);
  EXPECT_LT(1.0 - cos16, 0.5 * (1.0 - cos32));
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooBf16,
                         ::testing::Values(Case{"resnet18", true}, Case{"mobilenet_v2", true}, Case{"resnet50", false}),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.model); });

}  // namespace
}  // namespace systolic::testing
