// --precision across the commands: compare's agreement report, bench and profile against the
// peak of the plan's precision, info's per-precision peaks and kernels, tune/profile/simulate
// taking the flag (tune saving per precision), and one-line errors for bad values.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cli_run.h"
#include "tests/tiny_onnx.h"

namespace {

using systolic::testing::expect_clean_error;
using Result = systolic::testing::CliResult;

std::string dir() {
  static const std::string d = systolic::testing::cli_dir("cli_precision");
  return d;
}

Result sh(const std::string& args) { return systolic::testing::run_cli(dir(), args); }

const std::string& resnet18() {
  static const std::string m = systolic::testing::zoo_model(dir(), "resnet18");
  return m;
}

const std::string& tiny() {
  static const std::string m = [] {
    const std::string p = dir() + "/tiny.onnx";
    std::ofstream(p, std::ios::binary) << systolic::testing::tiny_conv_onnx();
    return p;
  }();
  return m;
}

nlohmann::json json_of(const Result& r) {
  EXPECT_EQ(r.status, 0) << r.err;
  return nlohmann::json::parse(r.out, nullptr, false);
}

TEST(CliPrecision, CompareInt8AgainstFp32) {
  const auto j = json_of(sh("compare " + resnet18() + " --precision int8 --json"));
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["precision"], "int8");
  EXPECT_EQ(j["samples"], 8);
  EXPECT_GE(j["cosine"].get<double>(), 0.999);
  EXPECT_LE(j["cosine"].get<double>(), 1.0 + 1e-9);
  EXPECT_GE(j["max_abs_error"].get<double>(), 0.0);
  for (const char* k : {"top1_agreement", "top5_agreement"}) {
    EXPECT_GE(j[k].get<double>(), 0.0) << k;
    EXPECT_LE(j[k].get<double>(), 1.0) << k;
  }
}

// --output: a tensor inside the network (uint8 NHWC in the int8 plan, dequantized and put back
// in NCHW order), a graph output by name, and a name no plan computes.
TEST(CliPrecision, CompareATensorInsideTheNetwork) {
  const auto j = json_of(sh("compare " + resnet18() + " --precision int8 --inputs random:2 --output layer2.1.relu --json"));
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["output"], "layer2.1.relu");
  EXPECT_EQ(j["rows"], 2);
  EXPECT_GE(j["cosine"].get<double>(), 0.999);
  EXPECT_LT(j["cosine"].get<double>(), 1.0);  // rounded to uint8: not the float values
  const auto o = json_of(sh("compare " + resnet18() + " --precision int8 --inputs random:2 --output logits --json"));
  EXPECT_EQ(o["output"], "logits");
  EXPECT_GE(o["cosine"].get<double>(), 0.999);
  // At batch 16 the plans may run micro-batches, each writing its part of the tensor: the
  // rows still add up to the batch.
  const auto m = json_of(
      sh("compare " + resnet18() + " --precision int8 --inputs random:1 --batch 16 --output layer2.1.relu --json"));
  EXPECT_EQ(m["rows"], 16);
  EXPECT_GE(m["cosine"].get<double>(), 0.999);
  expect_clean_error(sh("compare " + resnet18() + " --precision int8 --output layer2.1.conv1"),
                     "--output layer2.1.conv1: the fp32 plan computes no tensor of that name");
}

TEST(CliPrecision, CompareTextReportAndInputs) {
  Result r = sh("compare " + tiny() + " --precision bf16 --inputs random:2 --batch 2");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* s : {"bf16 against fp32", "2 samples, 4 rows", "cosine", "max |error|", "top-1", "top-5"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

TEST(CliPrecision, BenchReportsThePrecisionsPeak) {
  const auto j = json_of(sh("bench " + tiny() + " --precision int8 --iters 2 --warmup 1 --json --per-layer"));
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["precision"], "int8");
  EXPECT_GT(j["peak_gflops"].get<double>(), 0.0);
  EXPECT_EQ(j["peak_name"].get<std::string>().rfind("int8 ", 0), 0u) << j["peak_name"];
  EXPECT_GT(j["gflops"].get<double>(), 0.0);
  EXPECT_NEAR(j["gflop_per_run"].get<double>(), 2e-9 * 16 * 27 * 32 * 32, 1e-9);  // 2 OP per MAC
  bool int8_conv = false;
  for (const auto& l : j["layers"]) int8_conv |= l["op"] == "Conv" && l["precision"] == "int8";
  EXPECT_TRUE(int8_conv) << j.dump();
  Result t = sh("bench " + tiny() + " --precision int8 --iters 2 --warmup 1");
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("GOP per run"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("of the measured int8 peak"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("batch 1, int8,"), std::string::npos) << t.out;
  const auto f = json_of(sh("bench " + tiny() + " --iters 2 --warmup 1 --json"));
  EXPECT_EQ(f["precision"], "fp32");
  EXPECT_EQ(f["peak_name"].get<std::string>().rfind("fp32 ", 0), 0u) << f["peak_name"];
}

TEST(CliPrecision, InfoPrintsEachPrecisionsPeakAndKernel) {
  Result r = sh("info");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* s : {"\nfp32 peak ", "\nint8 peak ", "\nbf16 peak ", "\nfp32 conv ", "\nint8 conv ", "\nbf16 conv "})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  EXPECT_NE(r.out.find(" GOP/s "), std::string::npos) << r.out;
  // The bf16 line names a bf16 kernel, or the fp32 one that runs bf16 plans here and why.
  const std::size_t at = r.out.find("\nbf16 conv ");
  ASSERT_NE(at, std::string::npos);
  const std::string line = r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
  EXPECT_TRUE(line.find("conv_bf16_") != std::string::npos || line.find(" on bf16-rounded values (") != std::string::npos)
      << line;
}

TEST(CliPrecision, TuneProfileSimulateTakeThePrecision) {
  // tune saves per precision: bench --precision int8 finds it, fp32 bench does not.
  const auto t = json_of(sh("tune " + tiny() + " --precision int8 --seconds-per-point 0.05 --batches 2 --json --no-svg"));
  ASSERT_TRUE(t.is_object());
  EXPECT_EQ(t["precision"], "int8");
  Result b8 = sh("bench " + tiny() + " --precision int8 --iters 1 --warmup 0 --json");
  ASSERT_EQ(b8.status, 0) << b8.err;
  EXPECT_NE(b8.err.find("using tuned configuration batch 2"), std::string::npos) << b8.err;
  EXPECT_EQ(nlohmann::json::parse(b8.out)["batch"], 2);
  Result b32 = sh("bench " + tiny() + " --iters 1 --warmup 0 --json");
  ASSERT_EQ(b32.status, 0) << b32.err;
  EXPECT_EQ(b32.err.find("using tuned configuration"), std::string::npos) << b32.err;
  EXPECT_EQ(nlohmann::json::parse(b32.out)["batch"], 1);
  Result p = sh("profile " + tiny() + " --precision int8 --iters 2 --warmup 1");
  ASSERT_EQ(p.status, 0) << p.err;
  EXPECT_NE(p.out.find("batch 1, int8,"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("GOP/s int8 peak"), std::string::npos) << p.out;
  const auto s = json_of(sh("simulate " + tiny() + " --precision int8 --target tpu-v4 --json"));
  ASSERT_TRUE(s.is_object());
  EXPECT_EQ(s["plan_precision"], "int8");
  Result st = sh("simulate " + tiny() + " --precision bf16 --target tpu-v4");
  ASSERT_EQ(st.status, 0) << st.err;
  EXPECT_NE(st.out.find("(bf16)"), std::string::npos) << st.out;
}

TEST(CliPrecision, BadValuesAreOneLineErrors) {
  expect_clean_error(sh("bench " + tiny() + " --precision int4"), "int4");
  expect_clean_error(sh("tune " + tiny() + " --precision fp64"), "fp64");
  expect_clean_error(sh("compare " + tiny()), "compare needs bf16 or int8");
  expect_clean_error(sh("compare " + tiny() + " --precision fp32"), "compare needs bf16 or int8");
  expect_clean_error(sh("compare " + tiny() + " --precision int8 --inputs random:x"), "random:x");
  expect_clean_error(sh("compare " + tiny() + " --precision bf16 --calibration random:2"), "--calibration");
  const std::string plan = dir() + "/tiny.plan";
  ASSERT_EQ(sh("compile " + tiny() + " -o " + plan).status, 0);
  expect_clean_error(sh("compare " + plan + " --precision int8"), "compiled plan");
}

}  // namespace
