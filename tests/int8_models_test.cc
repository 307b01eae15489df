// Whole zoo models in int8 through the CLI: the accuracy gates of `compare` against fp32
// (cosine >= 0.999 for ResNet-50, >= 0.99 for MobileNetV2; ResNet-18's is in
// cli_precision_test), and exactness across instruction sets: one QDQ model (fixed
// quantization) run with every SYSTOLIC_ISA cap gives the same logits, byte for byte, because
// every int8 kernel equals the reference and the float epilogues round identically.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "frontend/tensor_io.h"
#include "tests/cli_run.h"
#include "tests/graph_builder.h"

namespace systolic::testing {
namespace {

std::string dir() {
  static const std::string d = cli_dir("int8_models");
  return d;
}

CliResult sh(const std::string& args, const std::string& cache = "cache") { return run_cli(dir(), args, cache); }

std::string zoo_model(const std::string& name) {
  const std::string p = dir() + "/" + name + ".onnx";
  EXPECT_EQ(sh("zoo " + name + " -o " + p).status, 0);
  return p;
}

class Int8Gate : public ::testing::TestWithParam<std::pair<const char*, double>> {};

TEST_P(Int8Gate, CompareAgainstFp32) {
  const auto [name, gate] = GetParam();
  const CliResult r = sh("compare " + zoo_model(name) + " --precision int8 --inputs random:4 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["precision"], "int8");
  std::printf("%s: int8 vs fp32 cosine %.6f, top-1 agreement %.3f\n", name, j["cosine"].get<double>(),
              j["top1_agreement"].get<double>());
  EXPECT_GE(j["cosine"].get<double>(), gate) << name;
  EXPECT_LT(j["cosine"].get<double>(), 1.0 - 1e-9) << name << ": the int8 plan computed fp32";
}

INSTANTIATE_TEST_SUITE_P(Zoo, Int8Gate,
                         ::testing::Values(std::make_pair("resnet50", 0.999), std::make_pair("mobilenet_v2", 0.99)),
                         [](const auto& i) { return std::string(i.param.first); });

class Int8EveryIsa : public ::testing::TestWithParam<const char*> {};

TEST_P(Int8EveryIsa, SameLogitsBytes) {
  const std::string name = GetParam();
  const std::string qdq = dir() + "/" + name + "_qdq.onnx";
  ASSERT_EQ(sh("quantize " + zoo_model(name) + " --calibration random:2 -o " + qdq).status, 0);
  ir::Tensor t;
  t.dtype = ir::DType::f32;
  t.shape = {2, 3, 224, 224};
  const std::string in = dir() + "/" + name + "_x.npy";
  ASSERT_TRUE(frontend::save_npy(in, random_input(t, 3)).ok());
  std::string want;
  for (const char* isa : {"ref", "avx2", "avxvnni", "avx512", "avx512vnni", "native"}) {
    setenv("SYSTOLIC_ISA", isa, 1);
    const std::string out = dir() + "/" + name + "_" + isa;
    const CliResult r = sh("run " + qdq + " --batch 2 --input input=" + in + " --output-dir " + out, std::string("c_") + isa);
    unsetenv("SYSTOLIC_ISA");
    ASSERT_EQ(r.status, 0) << isa << ": " << r.err;
    const std::string got = slurp(out + "/logits.npy");
    ASSERT_GT(got.size(), 2000u * 4) << isa;
    if (want.empty()) want = got;
    EXPECT_TRUE(got == want) << name << ": logits with SYSTOLIC_ISA=" << isa << " differ from the reference kernels'";
  }
  const CliResult k = sh("compile " + qdq + " --batch 2 --kernels", "c_native");
  EXPECT_NE(k.out.find(", int8, batch 2"), std::string::npos) << k.out;
  EXPECT_NE(k.out.find("qconv_u8s8_"), std::string::npos) << k.out;
}

INSTANTIATE_TEST_SUITE_P(Zoo, Int8EveryIsa, ::testing::Values("resnet18", "mobilenet_v2"));

}  // namespace
}  // namespace systolic::testing
