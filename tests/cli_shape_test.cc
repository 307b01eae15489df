// --shape NAME=D0xD1x...: binds symbolic dims other than the batch on compile, run, bench,
// profile, simulate, compare and quantize; run also binds them from the input files; the cache
// keys on them.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/cli_run.h"
#include "tests/tiny_onnx.h"

namespace {

using systolic::testing::expect_clean_error;
using Result = systolic::testing::CliResult;

std::string dir() {
  static const std::string d = systolic::testing::cli_dir("cli_shape");
  return d;
}

Result sh(const std::string& args) { return systolic::testing::run_cli(dir(), args); }

// float[N,3,H,W] -> Conv 3x3 pad 1 -> Relu -> GlobalAveragePool: y is [N,16,1,1] for any H, W.
const std::string& model() {
  static const std::string m = [] {
    const std::string p = dir() + "/hw.onnx";
    std::ofstream(p, std::ios::binary) << systolic::testing::tiny_conv_onnx(1, 0, true);
    return p;
  }();
  return m;
}

}  // namespace

TEST(CliShape, SymbolicDimsNeedAShape) {
  expect_clean_error(sh("compile " + model()), "bind it with --shape input=1x3x?x?");
  Result c = sh("compile " + model() + " --shape input=2x3x48x320");
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_NE(c.out.find("batch 2"), std::string::npos) << c.out;
}

TEST(CliShape, EveryCommandTakesIt) {
  Result r = sh("run " + model() + " --shape input=1x3x20x36");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("float32[1,16,1,1]"), std::string::npos) << r.out;
  Result b = sh("bench " + model() + " --shape input=1x3x20x36 --iters 2");
  EXPECT_EQ(b.status, 0) << b.err;
  Result p = sh("profile " + model() + " --shape input=1x3x20x36 --iters 2");
  EXPECT_EQ(p.status, 0) << p.err;
  Result s = sh("simulate " + model() + " --shape input=1x3x20x36 --batch 4");
  EXPECT_EQ(s.status, 0) << s.err;
  Result c = sh("compare " + model() + " --shape input=1x3x20x36 --precision int8 --calibration random:2 --json");
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_NE(c.out.find("\"cosine\":"), std::string::npos) << c.out;
  expect_clean_error(sh("compare " + model() + " --precision bf16"), "bind it with --shape input=1x3x?x?");
}

// quantize binds the dims for calibration; a .plan keeps them, and so does a QDQ file (whose
// inputs and outputs then take the calibrated sizes).
TEST(CliShape, QuantizeTakesIt) {
  expect_clean_error(sh("quantize " + model() + " --calibration random:2 -o " + dir() + "/q.plan"),
                     "bind it with --shape input=1x3x?x?");
  const std::string plan = dir() + "/q.plan", qdq = dir() + "/q.onnx";
  Result p = sh("quantize " + model() + " --calibration random:2 --shape input=2x3x20x36 -o " + plan);
  ASSERT_EQ(p.status, 0) << p.err;
  EXPECT_NE(p.out.find("batch 2"), std::string::npos) << p.out;
  Result q = sh("quantize " + model() + " --calibration random:2 --shape input=1x3x20x36 -o " + qdq);
  ASSERT_EQ(q.status, 0) << q.err;
  Result r = sh("run " + qdq);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("float32[1,16,1,1]"), std::string::npos) << r.out;
}

TEST(CliShape, RunBindsTheInputFilesShapes) {
  ASSERT_EQ(std::system(("/usr/bin/python3 -c \"import numpy as np; np.save('" + dir() +
                         "/x.npy', np.ones((2,3,24,40), np.float32))\"").c_str()),
            0);
  Result r = sh("run " + model() + " --input input=" + dir() + "/x.npy");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("float32[2,16,1,1]"), std::string::npos) << r.out;
}

TEST(CliShape, BadShapesAreNamedErrors) {
  expect_clean_error(sh("compile " + model() + " --shape input=1x4x20x20"), "dimension 1 is 3 in the model");
  expect_clean_error(sh("compile " + model() + " --shape input=1x3x20"), "rank 4");
  expect_clean_error(sh("compile " + model() + " --shape nope=1x3x20x20"), "no input named 'nope'");
  expect_clean_error(sh("compile " + model() + " --shape input=1x3x0x20"), "not a positive integer");
  expect_clean_error(sh("compile " + model() + " --shape input"), "expected NAME=");
  expect_clean_error(sh("compile " + model() + " --batch 2 --shape input=1x3x20x20"), "contradicts");
  const std::string plan = dir() + "/hw.plan";
  ASSERT_EQ(sh("compile " + model() + " --shape input=1x3x20x20 -o " + plan).status, 0);
  expect_clean_error(sh("run " + plan + " --shape input=1x3x24x24"), "recompile");
}
