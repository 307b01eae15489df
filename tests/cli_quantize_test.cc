// `systolic quantize`: an int8 plan and a standard QDQ model from the same calibration, the
// per-layer SQNR report, --keep-fp32 and the methods, and one-line errors for bad arguments.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>

#include <fstream>

#include "tests/cli_run.h"

namespace systolic::testing {
namespace {

std::string dir() {
  static const std::string d = cli_dir("cli_quantize");
  return d;
}

CliResult sh(const std::string& args) { return run_cli(dir(), args); }

const std::string& resnet18() {
  static const std::string m = systolic::testing::zoo_model(dir(), "resnet18");
  return m;
}

TEST(CliQuantize, WritesAnInt8PlanAndAQdqModel) {
  const std::string plan = dir() + "/r18.plan", qdq = dir() + "/r18_qdq.onnx";
  CliResult r = sh("quantize " + resnet18() + " --calibration random:3 --progress -o " + plan);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("wrote " + plan + ": int8 plan"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("calibrating"), std::string::npos) << r.err;  // the progress bar
  r = sh("run " + plan + " --output-dir " + dir() + "/from_plan");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("output logits: float32[1,1000]"), std::string::npos) << r.out;

  r = sh("quantize " + resnet18() + " --calibration random:3 -o " + qdq);
  ASSERT_EQ(r.status, 0) << r.err;
  onnx::ModelProto m;
  std::ifstream f(qdq, std::ios::binary);
  ASSERT_TRUE(m.ParseFromIstream(&f));
  int q = 0, dq = 0, conv = 0;
  for (const auto& n : m.graph().node()) q += n.op_type() == "QuantizeLinear", dq += n.op_type() == "DequantizeLinear",
                                       conv += n.op_type() == "Conv";
  int int8_weights = 0;
  for (const auto& t : m.graph().initializer()) int8_weights += t.data_type() == onnx::TensorProto::INT8 && t.dims_size() == 4;
  EXPECT_EQ(conv, 20);  // ResNet-18's convs, each behind Q/DQ
  EXPECT_GE(q, 20);
  EXPECT_GE(dq, q + 20);  // every activation pair plus the weights'
  EXPECT_EQ(int8_weights, 20);
  const CliResult k = sh("compile " + qdq + " --kernels");
  ASSERT_EQ(k.status, 0) << k.err;
  EXPECT_NE(k.out.find(", int8, batch 1"), std::string::npos) << k.out;  // a QDQ model runs in int8
}

TEST(CliQuantize, ReportKeepFp32AndMethods) {
  const CliResult r = sh("quantize " + resnet18() + " --calibration random:2 --report --keep-fp32 fc,layer4.1.conv2 -o " +
                         dir() + "/kept.plan");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* s : {"SQNR dB", "\nconv1 ", "\nlayer1.0.conv1 ", "lowest: "})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  for (const char* kept : {"\nfc ", "\nlayer4.1.conv2 "}) {
    const std::size_t at = r.out.find(kept);
    ASSERT_NE(at, std::string::npos) << kept << "\n" << r.out;
    const std::string line = r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
    EXPECT_NE(line.find(" float "), std::string::npos) << line;
  }
  for (const char* method : {"percentile", "entropy"}) {
    const CliResult m = sh("quantize " + resnet18() + " --calibration random:2 --method " + method + " -o " + dir() +
                           "/" + method + ".plan");
    EXPECT_EQ(m.status, 0) << method << ": " << m.err;
    EXPECT_NE(m.out.find(std::string("(") + method + ")"), std::string::npos) << m.out;
  }
}

// At batch 16 the int8 and float plans split the batch into different micro-batches: the report
// still pairs whole tensors (it printed only its header before).
TEST(CliQuantize, ReportOfAMicroBatchedPlan) {
  const CliResult r =
      sh("quantize " + resnet18() + " --calibration random:2 --batch 16 --report -o " + dir() + "/b16.plan");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* s : {"SQNR dB", "\nconv1 ", "\nlayer4.1.conv2 ", "lowest: "})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

TEST(CliQuantize, BadArgumentsAreOneLineErrors) {
  const std::string m = resnet18(), out = " -o " + dir() + "/x.plan";
  mkdir((dir() + "/empty").c_str(), 0755);
  expect_clean_error(sh("quantize " + m + out), "--calibration is required");
  expect_clean_error(sh("quantize " + m + " --calibration random:0" + out), "random:N takes a count");
  expect_clean_error(sh("quantize " + m + " --calibration " + dir() + "/empty" + out), "holds no .jpg, .png, .npy or .pb");
  expect_clean_error(sh("quantize " + m + " --calibration " + dir() + "/missing" + out), "does not exist");
  expect_clean_error(sh("quantize " + m + " --calibration random:2 --method foo" + out), "--method");
  expect_clean_error(sh("quantize " + m + " --calibration random:2 --keep-fp32 nosuch" + out), "--keep-fp32 nosuch");
  expect_clean_error(sh("quantize " + m + " --calibration random:2 -o " + dir() + "/x.txt"), "write a .plan");
  expect_clean_error(sh("quantize " + dir() + "/missing.onnx --calibration random:2" + out), "cannot open");
  // Checked before calibrating: nothing is computed for an output that cannot be written.
  const CliResult w = sh("quantize " + m + " --calibration random:2 -o " + dir() + "/no/such/dir/x.plan");
  expect_clean_error(w, "cannot write");
  EXPECT_EQ(w.out.find("calibrated"), std::string::npos) << w.out;
}

}  // namespace
}  // namespace systolic::testing
