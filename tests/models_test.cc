// Whole zoo models: the optimized plan against the reference executor and against
// ONNX Runtime (bench/ort_run.js), with the max relative error of the logits <= 1e-4.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "frontend/onnx/import.h"
#include "tests/graph_builder.h"
#include "tests/temp_dir.h"
#include "frontend/tensor_io.h"
#include "tools/zoo/zoo.h"

namespace systolic::testing {
namespace {

std::string temp_dir() { return scratch_dir("models"); }

std::string write_zoo(const std::string& name, const std::string& dir) {
  onnx::ModelProto m;
  EXPECT_TRUE(zoo::zoo_build(name, 0, &m).ok());
  const std::string path = dir + "/" + name + ".onnx";
  std::ofstream f(path, std::ios::binary);
  m.SerializeToOstream(&f);
  return path;
}

std::vector<float> run_model(const std::string& path, bool optimize, const runtime::HostTensor& input, int64_t batch) {
  auto g = frontend::import_onnx_file(path);
  EXPECT_TRUE(g.ok());
  plan::CompileOptions co;
  co.optimize = optimize;
  co.batch = batch;
  auto p = plan::compile(std::move(*g), co);
  EXPECT_TRUE(p.ok()) << p.status().message();
  auto s = runtime::Session::create(*p);
  EXPECT_TRUE(s.ok());
  std::vector<runtime::HostTensor> outs;
  Status st = (*s)->run({{"input", input}}, &outs);
  EXPECT_TRUE(st.ok()) << st.message();
  return std::vector<float>(outs[0].as<float>(), outs[0].as<float>() + outs[0].numel());
}

runtime::HostTensor image_batch(int64_t n) {
  ir::Tensor t;
  t.dtype = ir::DType::f32;
  t.shape = {n, 3, 224, 224};
  return random_input(t, 11);
}

}  // namespace

class ZooVsReference : public ::testing::TestWithParam<const char*> {};

TEST_P(ZooVsReference, OptimizedMatchesReferenceExecutor) {
  const std::string dir = temp_dir();
  const std::string path = write_zoo(GetParam(), dir);
  const auto in = image_batch(2);
  const auto opt = run_model(path, true, in, 2);
  const auto ref = run_model(path, false, in, 2);
  ASSERT_EQ(opt.size(), 2000u);
  EXPECT_LT(max_rel_error(opt, ref), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooVsReference, ::testing::Values("resnet18", "mobilenet_v2"));

// A plan compiled with --preprocess imagenet on uint8 images gives the logits of the float
// model on the same images normalised by hand, with the normalisation folded into the stem.
class ZooImageInput : public ::testing::TestWithParam<const char*> {};

TEST_P(ZooImageInput, FoldedNormalisationMatchesFloatModel) {
  const std::string dir = temp_dir();
  const std::string path = write_zoo(GetParam(), dir);
  auto g = frontend::import_onnx_file(path);
  ASSERT_TRUE(g.ok());
  plan::CompileOptions co;
  co.batch = 2;
  co.preprocess = ir::imagenet_preprocess();
  auto p = plan::compile(std::move(*g), co);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ((*p)->preprocess.resize, 256);
  if (host_cpu().has_avx2_fma()) {
    int normalize = 0;
    for (const ir::Node& n : (*p)->graph.nodes) normalize += n.op == ir::Op::NormalizeImage;
    EXPECT_EQ(normalize, 0) << "the normalisation was not folded";
  }
  auto s = runtime::Session::create(*p);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ((*s)->inputs()[0].shape, (ir::Shape{2, 224, 224, 3}));
  std::mt19937 rng(5);
  runtime::HostTensor img = runtime::HostTensor::zeros(ir::DType::u8, {2, 224, 224, 3});
  for (auto& v : img.data) v = static_cast<uint8_t>(rng() & 255);
  runtime::HostTensor x = runtime::HostTensor::zeros(ir::DType::f32, {2, 3, 224, 224});
  const ir::ImagePreprocess& pre = co.preprocess;
  const int hw = 224 * 224;
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int q = 0; q < hw; ++q)
        x.as<float>()[(n * 3 + c) * hw + q] = (img.data[(n * hw + q) * 3 + c] / 255.f - pre.mean[c]) / pre.std[c];
  std::vector<runtime::HostTensor> outs;
  ASSERT_TRUE((*s)->run({{"input", img}}, &outs).ok());
  const std::vector<float> got(outs[0].as<float>(), outs[0].as<float>() + outs[0].numel());
  const auto want = run_model(path, false, x, 2);
  EXPECT_LT(max_rel_error(got, want), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooImageInput, ::testing::Values("resnet18", "mobilenet_v2"));

TEST(ZooVsOnnxRuntime, LogitsAgree) {
  const std::string bench = std::string(SYSTOLIC_SOURCE_DIR) + "/bench";
  struct stat sb;
  if (stat((bench + "/node_modules/onnxruntime-node").c_str(), &sb) != 0) {
    if (std::getenv("SYSTOLIC_REQUIRE_ORT")) FAIL() << "onnxruntime-node is not installed in bench/ (run scripts/setup.sh)";
    GTEST_SKIP() << "onnxruntime-node is not installed in bench/";
  }
  const std::string dir = temp_dir();
  for (const char* name : {"resnet50", "mobilenet_v2", "resnet18"}) {
    const std::string path = write_zoo(name, dir);
    const auto in = image_batch(1);
    const std::string in_path = dir + "/" + name + ".input.npy";
    ASSERT_TRUE(frontend::save_npy(in_path, in).ok());
    const std::string out_dir = dir + "/" + name + "_ort";
    mkdir(out_dir.c_str(), 0755);
    const std::string cmd = "node " + bench + "/ort_run.js " + path + " " + out_dir + " input=" + in_path + " > /dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    auto ort = frontend::load_tensor(out_dir + "/logits.npy");
    ASSERT_TRUE(ort.ok()) << ort.status().message();
    const std::vector<float> want(ort->as<float>(), ort->as<float>() + ort->numel());
    const auto got = run_model(path, true, in, 1);
    EXPECT_LT(max_rel_error(got, want), 1e-4) << name;
  }
}

}  // namespace systolic::testing
