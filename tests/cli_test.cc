// The systolic command: the documented workflows work, and every kind of bad input gives a
// one-line error and exit status 1 (never a crash).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <map>
#include <sstream>

#include "image/image.h"
#include "image/test_images.h"
#include "tests/cli_run.h"
#include "frontend/tensor_io.h"

namespace {

using systolic::testing::expect_clean_error;
using systolic::testing::slurp;
using Result = systolic::testing::CliResult;

std::string dir() {
  static const std::string d = systolic::testing::cli_dir("cli");
  return d;
}

Result sh(const std::string& args) { return systolic::testing::run_cli(dir(), args); }

const std::string& model() {
  static const std::string m = [] {
    const std::string p = dir() + "/r18.onnx";
    EXPECT_EQ(sh("zoo resnet18 -o " + p).status, 0);
    return p;
  }();
  return m;
}

}  // namespace

TEST(Cli, CompileRunAndPlanAgree) {
  const std::string plan = dir() + "/r18.plan";
  Result c = sh("compile " + model() + " -o " + plan);
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_NE(c.out.find("nodes: 69 ->"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("arena"), std::string::npos);
  ASSERT_EQ(sh("run " + model() + " --output-dir " + dir() + "/a").status, 0);
  Result r = sh("run " + plan + " --output-dir " + dir() + "/b");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("logits"), std::string::npos);
  EXPECT_EQ(slurp(dir() + "/a/logits.npy"), slurp(dir() + "/b/logits.npy"));
  EXPECT_GT(slurp(dir() + "/a/logits.npy").size(), 4000u);
}

TEST(Cli, BenchJsonHasTheDocumentedKeys) {
  Result r = sh("bench " + model() + " --iters 2 --warmup 1 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"model", "batch", "precision", "threads", "p50_ms", "p90_ms", "p99_ms", "throughput_per_s",
                        "gflops", "peak_rss_bytes"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_GT(j["gflops"].get<double>(), 0.0);
  EXPECT_GT(j["p50_ms"].get<double>(), 0.0);
}

TEST(Cli, BenchRunsAPlanAtItsOwnBatch) {
  const std::string plan = dir() + "/r18b2.plan";
  ASSERT_EQ(sh("compile " + model() + " --batch 2 -o " + plan).status, 0);
  Result r = sh("bench " + plan + " --iters 1 --warmup 0 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["batch"].get<int>(), 2);
  expect_clean_error(sh("bench " + plan + " --batch 4 --iters 1"), "compiled for batch 2");
}

// --micro-batch: a plan for batch 4 run as 2 x 2 gives the logits of the plan run whole; a
// micro-batch that does not divide the batch is a one-line error.
TEST(Cli, MicroBatchRunsTheWholeBatch) {
  Result c = sh("compile " + model() + " --batch 4 --micro-batch 2 --kernels -o " + dir() + "/r18mb.plan");
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_NE(c.out.find("micro-batch: 2 (the batch runs as 2 runs"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("batch 4 runs as 2 x batch 2"), std::string::npos) << c.out;
  ASSERT_EQ(sh("compile " + model() + " --batch 4 --micro-batch 4 -o " + dir() + "/r18whole.plan").status, 0);
  for (const char* plan : {"r18mb", "r18whole"}) {
    Result r = sh(std::string("run ") + dir() + "/" + plan + ".plan --output-dir " + dir() + "/" + plan);
    ASSERT_EQ(r.status, 0) << r.err;
  }
  auto a = systolic::frontend::load_tensor(dir() + "/r18mb/logits.npy");
  auto b = systolic::frontend::load_tensor(dir() + "/r18whole/logits.npy");
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->shape, (std::vector<int64_t>{4, 1000}));
  ASSERT_EQ(a->shape, b->shape);
  for (int64_t i = 0; i < a->numel(); ++i) ASSERT_NEAR(a->as<float>()[i], b->as<float>()[i], 1e-4f) << i;
  expect_clean_error(sh("compile " + model() + " --batch 4 --micro-batch 3"), "micro-batch 3 does not divide batch 4");
  // The plan is for batch 4 whatever its passes: --shape checks against that; a different
  // --micro-batch on a plan is refused (it was fixed when the plan was compiled).
  EXPECT_EQ(sh("run " + dir() + "/r18mb.plan --shape input=4x3x224x224 --output-dir " + dir() + "/r18shape").status, 0);
  expect_clean_error(sh("bench " + dir() + "/r18mb.plan --micro-batch 4 --iters 1"), "runs its batch as runs of 2");
}

// `simulate --compare ...,host` puts the plan run here beside the simulated rows, per batch; a
// plan compiled for one batch says so for the others instead of measuring a wrong one.
TEST(Cli, CompareIncludesTheMeasuredHostRow) {
  Result r = sh("simulate " + model() + " --compare tpu-v4,host --batch 1,2 --json");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["runs"].size(), 4u);  // two targets x two batches, simulated
  ASSERT_EQ(j["measured"].size(), 2u);
  for (int k = 0; k < 2; ++k) {
    const auto& m = j["measured"][k];
    EXPECT_EQ(m["target"], "host (measured)");
    EXPECT_EQ(m["batch"].get<int>(), k + 1);
    EXPECT_GE(m["runs"].get<int>(), 5);
    const double ms = m["latency_ms"].get<double>();
    EXPECT_GT(ms, 0.0);
    EXPECT_NEAR(m["throughput_per_s"].get<double>(), 1e3 * (k + 1) / ms, 1e-6);
  }
  Result t = sh("simulate " + model() + " --compare host --batch 1");
  ASSERT_EQ(t.status, 0) << t.err;
  EXPECT_NE(t.out.find("host (measured)"), std::string::npos) << t.out;
  EXPECT_FALSE(nlohmann::json::parse(sh("simulate " + model() + " --compare host --batch 1 --no-measure --json").out)
                   .contains("measured"));
  EXPECT_FALSE(nlohmann::json::parse(sh("simulate " + model() + " --compare tpu-v4 --batch 1 --json").out).contains("measured"));
  const std::string plan = dir() + "/r18b1.plan";
  ASSERT_EQ(sh("compile " + model() + " -o " + plan).status, 0);
  Result p = sh("simulate " + plan + " --compare host --batch 1,2 --json");
  ASSERT_EQ(p.status, 0) << p.err;
  auto pj = nlohmann::json::parse(p.out);
  ASSERT_EQ(pj["measured"].size(), 2u);
  EXPECT_GT(pj["measured"][0]["latency_ms"].get<double>(), 0.0);
  EXPECT_NE(pj["measured"][1]["error"].get<std::string>().find("compiled for batch 1"), std::string::npos);
}

TEST(Cli, DumpPassesPrintsEveryPass) {
  Result r = sh("compile " + model() + " --dump-passes");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* p : {"constant_folding", "fold_batchnorm", "fuse_epilogue", "layout_assignment", "memory_plan"})
    EXPECT_NE(r.out.find(std::string("=== after ") + p), std::string::npos) << p;
}

TEST(Cli, BadModelFiles) {
  expect_clean_error(sh("run " + dir() + "/missing.onnx"), "cannot open");
  { std::ofstream(dir() + "/garbage.onnx") << "definitely not protobuf \x01\x02\x03"; }
  expect_clean_error(sh("run " + dir() + "/garbage.onnx"), "not a valid ONNX model");
  const std::string bytes = slurp(model());
  { std::ofstream(dir() + "/trunc.onnx", std::ios::binary) << bytes.substr(0, bytes.size() / 2); }
  expect_clean_error(sh("compile " + dir() + "/trunc.onnx"), "trunc.onnx");
  const std::string plan = dir() + "/v.plan";
  ASSERT_EQ(sh("compile " + model() + " -o " + plan).status, 0);
  std::string p = slurp(plan);
  p[8] = 99;
  { std::ofstream(dir() + "/other.plan", std::ios::binary) << p; }
  expect_clean_error(sh("run " + dir() + "/other.plan"), "version");
  { std::ofstream(dir() + "/cut.plan", std::ios::binary) << slurp(plan).substr(0, 5000); }
  expect_clean_error(sh("run " + dir() + "/cut.plan"), "truncated or corrupt");
}

TEST(Cli, BadInputs) {
  const std::string npy = dir() + "/in.npy";
  ASSERT_EQ(sh("run " + model() + " --output-dir " + dir() + "/o").status, 0);
  // A wrong input name, shape and dtype; a missing and a corrupt input file.
  ASSERT_EQ(std::system(("/usr/bin/python3 -c \"import numpy as np; np.save('" + dir() +
                         "/small.npy', np.zeros((1,3,100,100), np.float32)); np.save('" + dir() +
                         "/ints.npy', np.zeros((1,3,224,224), np.int64)); np.save('" + dir() +
                         "/ok.npy', np.zeros((1,3,224,224), np.float32))\"").c_str()),
            0);
  expect_clean_error(sh("run " + model() + " --input nope=" + dir() + "/ok.npy"), "no input named 'nope'");
  expect_clean_error(sh("run " + model() + " --input input=" + dir() + "/small.npy"), "dimension 2 is 224 in the model");
  expect_clean_error(sh("run " + model() + " --input input=" + dir() + "/ints.npy"), "int64");
  expect_clean_error(sh("run " + model() + " --input input=" + dir() + "/none.npy"), "none.npy");
  { std::ofstream(dir() + "/bad.npy") << "\x93NUMPY\x01\x00garbage"; }
  expect_clean_error(sh("run " + model() + " --input input=" + dir() + "/bad.npy"), "bad.npy");
  expect_clean_error(sh("run " + model() + " --input input"), "NAME=FILE");
  Result ok = sh("run " + model() + " --input input=" + dir() + "/ok.npy");
  EXPECT_EQ(ok.status, 0) << ok.err;
}

TEST(Cli, OnnxSuiteCountsAndFailsOnFailure) {
  const std::string data = "/usr/share/libonnx-testdata/data/node";
  struct stat sb;
  if (stat(data.c_str(), &sb) != 0) GTEST_SKIP() << "libonnx-testdata is not installed";
  Result r = sh("onnx-suite " + data + "/test_relu " + data + "/test_conv_with_strides_padding " + data + "/test_stft");
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("2 passed, 0 failed, 1 skipped"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unsupported  test_stft"), std::string::npos) << r.out;
  // A case whose expected output is wrong must fail.
  const std::string bad = dir() + "/test_relu_wrong";
  ASSERT_EQ(std::system(("cp -r " + data + "/test_relu " + bad + " && cp " + data +
                         "/test_relu/test_data_set_0/input_0.pb " + bad + "/test_data_set_0/output_0.pb").c_str()),
            0);
  Result f = sh("onnx-suite " + bad);
  EXPECT_EQ(f.status, 1);
  EXPECT_NE(f.out.find("0 passed, 1 failed, 0 skipped"), std::string::npos) << f.out;
}

TEST(Cli, SecondRunUsesTheCompileCache) {
  const std::string m = dir() + "/cached.onnx";
  ASSERT_EQ(sh("zoo mobilenet_v2 --seed 3 -o " + m).status, 0);
  Result first = sh("run " + m + " --output-dir " + dir() + "/c1");
  ASSERT_EQ(first.status, 0) << first.err;
  EXPECT_NE(first.err.find("systolic: compiled in "), std::string::npos) << first.err;
  EXPECT_NE(first.err.find("; cached as " + dir() + "/cache/"), std::string::npos) << first.err;
  Result second = sh("run " + m + " --output-dir " + dir() + "/c2");
  ASSERT_EQ(second.status, 0) << second.err;
  EXPECT_EQ(second.err.rfind("systolic: using cached plan " + dir() + "/cache/", 0), 0u) << second.err;
  EXPECT_NE(second.err.find("loaded in"), std::string::npos) << second.err;
  EXPECT_EQ(slurp(dir() + "/c1/logits.npy"), slurp(dir() + "/c2/logits.npy"));
  Result off = sh("run " + m + " --no-cache");
  ASSERT_EQ(off.status, 0) << off.err;
  EXPECT_EQ(off.err.find("cached"), std::string::npos) << off.err;
  // An unusable cache directory only disables caching.
  { std::ofstream(dir() + "/not_a_dir") << "x"; }
  const std::string cmd = "SYSTOLIC_CACHE_DIR=" + dir() + "/not_a_dir/sub " + std::string(SYSTOLIC_BINARY) + " run " +
                          m + " > /dev/null 2> " + dir() + "/nocache_err";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_NE(slurp(dir() + "/nocache_err").find("systolic: note: compile cache disabled"), std::string::npos)
      << slurp(dir() + "/nocache_err");
}

TEST(Cli, ProfileWritesAChromeTraceAndARoofline) {
  const std::string trace = dir() + "/bench_trace.json";
  Result b = sh("bench " + model() + " --iters 2 --warmup 1 --profile " + trace);
  ASSERT_EQ(b.status, 0) << b.err;
  auto j = nlohmann::json::parse(slurp(trace));
  int steps = 0, runs = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    EXPECT_TRUE(e.contains("ts") && e.contains("dur") && e.contains("pid") && e.contains("tid"));
    if (e["cat"] == "run") {
      ++runs;
    } else {
      ++steps;
      EXPECT_TRUE(e["args"].contains("kernel") && e["args"].contains("gflops"));
    }
  }
  EXPECT_EQ(runs, 2);
  EXPECT_GT(steps, 2 * 20);
  EXPECT_EQ(steps % 2, 0);

  Result r = sh("run " + model() + " --profile " + dir() + "/run_trace.json");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(slurp(dir() + "/run_trace.json"))["traceEvents"].size(), steps / 2 + 1 + 2u);

  const std::string svg = dir() + "/roofline.svg";
  Result p = sh("profile " + model() + " --iters 2 --svg " + svg);
  ASSERT_EQ(p.status, 0) << p.err;
  for (const char* col : {"layer", "kernel", "share", "GFLOP/s", "%peak", "FLOP/B", "bound", "GB/s"})
    EXPECT_NE(p.out.find(col), std::string::npos) << col;
  EXPECT_NE(p.out.find("compute"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("memory"), std::string::npos) << p.out;
  const std::string s = slurp(svg);
  EXPECT_EQ(s.rfind("<svg", 0), 0u);
  EXPECT_NE(s.find("<circle"), std::string::npos);
  EXPECT_NE(s.find("<title>"), std::string::npos);
}

TEST(Cli, ImagePreprocessingFlags) {
  const std::string plan = dir() + "/r18img.plan";
  Result c = sh("compile " + model() + " --preprocess imagenet -o " + plan);
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_NE(c.out.find("input uint8[1,224,224,3]"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("resize 256, center-crop 224x224"), std::string::npos) << c.out;
  Result r = sh("run " + plan + " --output-dir " + dir() + "/img");
  EXPECT_EQ(r.status, 0) << r.err;
  // A float tensor where the image goes, and flags that cannot apply.
  ASSERT_EQ(std::system(("/usr/bin/python3 -c \"import numpy as np; np.save('" + dir() +
                         "/f.npy', np.zeros((1,3,224,224), np.float32))\"").c_str()),
            0);
  expect_clean_error(sh("run " + plan + " --input input=" + dir() + "/f.npy"), "expected uint8[1,224,224,3]");
  expect_clean_error(sh("compile " + model() + " --preprocess cifar"), "unknown preset");
  expect_clean_error(sh("compile " + model() + " --mean 0.5,0.5,0.5"), "--mean and --std go together");
  expect_clean_error(sh("compile " + model() + " --preprocess imagenet --crop 300"), "crop to the model's size");
  expect_clean_error(sh("compile " + model() + " --preprocess imagenet --crop 2x"), "expected N or HxW");
  expect_clean_error(sh("compile " + model() + " --mean 0.5,0.5 --std 0.2,0.2"), "3 mean and std values");
  expect_clean_error(sh("compile " + model() + " --crop 224"), "need --preprocess");
  expect_clean_error(sh("run " + plan + " --preprocess imagenet"), "compiled plan");
}

// classify: every file is reported once (images classified, broken files skipped with their
// reason), the summary has its keys, and the top-1 of each image is the argmax of `run` on
// the same image preprocessed by `systolic preprocess` (an independent path to the logits).
TEST(Cli, ClassifyReportsEveryFileAndAgreesWithRun) {
  using systolic::image::testing::make_image;
  using systolic::image::testing::Pattern;
  const std::string imgs = dir() + "/images";
  mkdir(imgs.c_str(), 0755);
  mkdir((imgs + "/sub").c_str(), 0755);
  const Pattern pats[] = {Pattern::gradient, Pattern::edges, Pattern::smooth_noise, Pattern::noise};
  std::vector<std::string> good;
  for (int i = 0; i < 5; ++i) {
    systolic::image::Image img = make_image(300 + 37 * i, 260 - 11 * i, pats[i % 4], i + 1);
    std::vector<uint8_t> bytes;
    const bool png = i == 3;
    ASSERT_TRUE((png ? systolic::image::encode_png(img, &bytes) : systolic::image::encode_jpeg(img, 90, &bytes)).ok());
    const std::string path = imgs + (i == 4 ? "/sub/" : "/") + "img" + std::to_string(i) + (png ? ".png" : ".jpg");
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    good.push_back(path);
  }
  const std::string jpg = slurp(good[0]);
  std::ofstream(imgs + "/cut.jpg", std::ios::binary) << jpg.substr(0, jpg.size() / 3);
  std::ofstream(imgs + "/notes.txt") << "not an image\n";
  const std::string out = dir() + "/results.jsonl", summary = dir() + "/summary.json", trace = dir() + "/cl.json";
  Result r = sh("classify " + model() + " --images " + imgs + " --batch 2 --top 3 -o " + out + " --summary-json " +
                summary + " --profile " + trace + " --quiet");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("skipped " + imgs + "/cut.jpg"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("bottleneck"), std::string::npos) << r.out;
  auto sj = nlohmann::json::parse(slurp(summary));
  for (const char* k : {"images", "failed", "throughput_per_s", "p50_ms", "p99_ms", "stages", "bottleneck"})
    EXPECT_TRUE(sj.contains(k)) << k;
  EXPECT_EQ(sj["images"].get<int>(), 5);
  EXPECT_EQ(sj["failed"].get<int>(), 2);
  EXPECT_GT(sj["throughput_per_s"].get<double>(), 0.0);
  std::map<std::string, nlohmann::json> lines;
  std::istringstream in(slurp(out));
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    EXPECT_EQ(lines.count(j["path"].get<std::string>()), 0u) << "reported twice: " << line;
    lines[j["path"].get<std::string>()] = j;
  }
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_EQ(lines[imgs + "/notes.txt"]["status"], "error");
  EXPECT_NE(lines[imgs + "/notes.txt"]["error"].get<std::string>().find("not a JPEG or PNG"), std::string::npos);
  for (const std::string& path : good) {
    const auto& j = lines[path];
    ASSERT_EQ(j["status"], "ok") << path;
    ASSERT_EQ(j["top"].size(), 3u);
    EXPECT_GE(j["top"][0]["prob"].get<double>(), j["top"][1]["prob"].get<double>());
    // The same image through preprocess + run: the float model on the normalised crop.
    const std::string npy = dir() + "/crop.npy";
    ASSERT_EQ(sh("preprocess " + path + " -o " + npy).status, 0);
    auto crop = systolic::frontend::load_tensor(npy);
    ASSERT_TRUE(crop.ok());
    systolic::runtime::HostTensor x = systolic::runtime::HostTensor::zeros(systolic::ir::DType::f32, {1, 3, 224, 224});
    const float mean[] = {0.485f, 0.456f, 0.406f}, stdv[] = {0.229f, 0.224f, 0.225f};
    for (int c = 0; c < 3; ++c)
      for (int q = 0; q < 224 * 224; ++q)
        x.as<float>()[c * 224 * 224 + q] = (crop->data[q * 3 + c] / 255.f - mean[c]) / stdv[c];
    ASSERT_TRUE(systolic::frontend::save_npy(dir() + "/x.npy", x).ok());
    ASSERT_EQ(sh("run " + model() + " --input input=" + dir() + "/x.npy --output-dir " + dir() + "/cls").status, 0);
    auto logits = systolic::frontend::load_tensor(dir() + "/cls/logits.npy");
    ASSERT_TRUE(logits.ok());
    const float* l = logits->as<float>();
    const int64_t argmax = std::max_element(l, l + 1000) - l;
    EXPECT_EQ(j["top"][0]["class"].get<int64_t>(), argmax) << path;
  }
  EXPECT_NE(slurp(trace).find("\"infer\""), std::string::npos);
  // Bad requests.
  expect_clean_error(sh("classify " + model() + " --images " + dir() + "/nowhere"), "no such file");
  { std::ofstream(dir() + "/labels.txt") << "a\nb\n"; }
  expect_clean_error(sh("classify " + model() + " --images " + imgs + " --labels " + dir() + "/labels.txt"),
                     "has 2 labels; the model has 1000 classes");
  const std::string plain = dir() + "/plain.plan";
  ASSERT_EQ(sh("compile " + model() + " -o " + plain).status, 0);
  expect_clean_error(sh("classify " + plain + " --images " + imgs), "takes tensors, not images");
}
