// `systolic tune` end to end on a tiny model: the JSON report, the saved recommendation that
// bench then runs by default, compiled plans (fixed batch), and clean errors for bad input.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/cli_run.h"
#include "tests/tiny_onnx.h"

namespace {

using systolic::testing::expect_clean_error;
using systolic::testing::slurp;
using Result = systolic::testing::CliResult;

std::string dir() {
  static const std::string d = systolic::testing::cli_dir("cli_tune");
  return d;
}

// A private cache directory (compiled plans and tune results), by name.
Result sh(const std::string& args, const std::string& cache = "cache") {
  return systolic::testing::run_cli(dir(), args, cache);
}

std::string tiny_model(const std::string& name, uint32_t seed = 1, int64_t fixed_batch = 0) {
  const std::string p = dir() + "/" + name;
  std::ofstream(p, std::ios::binary) << systolic::testing::tiny_conv_onnx(seed, fixed_batch);
  return p;
}

const char* kFast = " --seconds-per-point 0.05 --max-batch 8";

TEST(CliTune, JsonReportSavedRecommendationAndBenchUsesIt) {
  const std::string m = tiny_model("tiny.onnx");
  const std::string svg = dir() + "/tiny.svg";
  Result r = sh("tune " + m + kFast + " --json --svg " + svg);
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  for (const char* k : {"model", "precision", "isa", "host", "threads", "budgets", "table", "recommended", "saved", "svg"})
    EXPECT_TRUE(j.contains(k)) << k;
  EXPECT_EQ(j["precision"], "fp32");
  ASSERT_TRUE(j["table"].is_array());
  ASSERT_GE(j["table"].size(), 2u);
  // The recommendation is the fastest row (no budgets given), checked against the table here.
  double best = 0;
  for (const auto& row : j["table"]) {
    for (const char* k : {"batch", "instances", "threads", "fits", "meets_budgets", "throughput_per_s", "p50_ms",
                          "p99_ms", "runs", "estimate_bytes", "peak_bytes", "note"})
      EXPECT_TRUE(row.contains(k)) << k;
    EXPECT_LE(row["batch"].get<int>(), 8);
    EXPECT_EQ(row["instances"].get<int>() * row["threads"].get<int>(), j["threads"].get<int>());
    if (row["fits"]) best = std::max(best, row["throughput_per_s"].get<double>());
  }
  const auto& rec = j["recommended"];
  ASSERT_TRUE(rec.is_object()) << r.out;
  for (const char* k : {"batch", "instances", "threads", "throughput_per_s", "p99_ms", "peak_bytes"})
    EXPECT_TRUE(rec.contains(k)) << k;
  EXPECT_DOUBLE_EQ(rec["throughput_per_s"].get<double>(), best);
  EXPECT_EQ(slurp(svg).rfind("<?xml", 0), 0u);
  const std::string saved = j["saved"];
  EXPECT_EQ(saved.rfind(dir() + "/cache/tune/", 0), 0u) << saved;
  auto stored = nlohmann::json::parse(slurp(saved));
  EXPECT_EQ(stored["batch"], rec["batch"]);

  // bench, with no configuration given, runs the saved one and says so.
  Result b = sh("bench " + m + " --iters 2 --warmup 1 --json");
  ASSERT_EQ(b.status, 0) << b.err;
  auto bj = nlohmann::json::parse(b.out);
  EXPECT_EQ(bj["batch"], rec["batch"]);
  EXPECT_EQ(bj["instances"], rec["instances"]);
  EXPECT_EQ(bj["threads"], rec["threads"]);
  const int inst = rec["instances"], thr = rec["threads"];
  const std::string line = "systolic: using tuned configuration batch " + std::to_string(rec["batch"].get<int>()) + ", " +
                           std::to_string(inst) + (inst == 1 ? " instance x " : " instances x ") + std::to_string(thr) +
                           (thr == 1 ? " thread" : " threads") + " (from " + saved + ")";
  EXPECT_NE(b.err.find(line), std::string::npos) << b.err;
  // Runs per instance: the throughput counts every instance's images.
  EXPECT_GT(bj["throughput_per_s"].get<double>(), 0);
  // Any explicit configuration, or --no-tuned, leaves the saved one alone.
  for (const char* args : {" --no-tuned", " --batch 1", " --threads 1", " --instances 1"}) {
    Result o = sh("bench " + m + " --iters 1 --warmup 0 --json" + args);
    ASSERT_EQ(o.status, 0) << args << o.err;
    EXPECT_EQ(o.err.find("using tuned configuration"), std::string::npos) << args;
    EXPECT_EQ(nlohmann::json::parse(o.out)["batch"], 1) << args;
  }
  // Other model bytes: no saved configuration.
  const std::string other = tiny_model("other.onnx", 2);
  Result o = sh("bench " + other + " --iters 1 --warmup 0 --json");
  ASSERT_EQ(o.status, 0) << o.err;
  EXPECT_EQ(o.err.find("using tuned configuration"), std::string::npos);
}

TEST(CliTune, TableAndChartByDefault) {
  const std::string m = tiny_model("table.onnx");
  const std::string cmd = "cd " + dir() + " && SYSTOLIC_CACHE_DIR=" + dir() + "/cache2 " + SYSTOLIC_BINARY + " tune " + m +
                          kFast + " --batches 1,2 --no-save > " + dir() + "/table.txt 2> " + dir() + "/table.err";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << slurp(dir() + "/table.err");
  const std::string out = slurp(dir() + "/table.txt");
  for (const char* s : {"instances x threads", "img/s", "p99 ms", "peak MiB", "<- recommended", "recommended  batch ",
                        "chart        table.tune.svg"})
    EXPECT_NE(out.find(s), std::string::npos) << s << "\n" << out;
  EXPECT_EQ(out.find("saved "), std::string::npos);
  EXPECT_EQ(slurp(dir() + "/table.tune.svg").rfind("<?xml", 0), 0u);
}

TEST(CliTune, ExplicitInstancesInBench) {
  const std::string m = tiny_model("inst.onnx");
  Result b = sh("bench " + m + " --instances 2 --threads 1 --batch 2 --iters 3 --warmup 1 --json");
  ASSERT_EQ(b.status, 0) << b.err;
  auto j = nlohmann::json::parse(b.out);
  EXPECT_EQ(j["instances"], 2);
  EXPECT_EQ(j["threads"], 1);
  EXPECT_EQ(j["batch"], 2);
  EXPECT_GT(j["throughput_per_s"].get<double>(), 0);
}

TEST(CliTune, CompiledPlanTunesOnlyTheSplit) {
  const std::string m = tiny_model("plan.onnx");
  const std::string plan = dir() + "/tiny4.plan";
  ASSERT_EQ(sh("compile " + m + " --batch 4 -o " + plan).status, 0);
  Result r = sh("tune " + plan + " --seconds-per-point 0.05 --json --no-svg");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["table"].empty());
  for (const auto& row : j["table"]) EXPECT_EQ(row["batch"], 4);
  EXPECT_TRUE(j["svg"].is_null());
  Result b = sh("bench " + plan + " --iters 1 --warmup 0 --json");
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_NE(b.err.find("using tuned configuration batch 4"), std::string::npos) << b.err;
  expect_clean_error(sh("tune " + plan + " --batches 2"), "fixed batch");
}

TEST(CliTune, FixedBatchOnnxTunesOnlyTheSplit) {
  const std::string m = tiny_model("fixed3.onnx", 1, 3);
  Result r = sh("tune " + m + " --seconds-per-point 0.05 --json --no-svg --no-save");
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_FALSE(j["table"].empty());
  for (const auto& row : j["table"]) EXPECT_EQ(row["batch"], 3);
  EXPECT_EQ(j["recommended"]["batch"], 3);
  expect_clean_error(sh("tune " + m + " --batches 1,2"), "has a fixed batch of 3");
}

TEST(CliTune, NothingFitsATinyMemoryBudget) {
  const std::string m = tiny_model("nofit.onnx");
  Result r = sh("tune " + m + kFast + " --memory-budget 1K --json --no-svg", "cache3");
  expect_clean_error(r, "no configuration fits: does not fit");
  auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["recommended"].is_null());
  ASSERT_FALSE(j["table"].empty());
  for (const auto& row : j["table"]) {
    EXPECT_FALSE(row["fits"].get<bool>());
    EXPECT_EQ(row["batch"], 1);  // nothing larger is tried
  }
  EXPECT_TRUE(j["saved"].is_null());
}

TEST(CliTune, BadInput) {
  const std::string m = tiny_model("bad.onnx");
  expect_clean_error(sh("tune " + m + " --precision fp64"), "--precision: fp64 not in {fp32,bf16,int8}");
  expect_clean_error(sh("tune " + m + " --precision bf16 --calibration random:2"), "--calibration");
  expect_clean_error(sh("tune " + m + " --memory-budget lots"), "invalid size 'lots'");
  expect_clean_error(sh("tune " + m + " --batches 1,x"), "invalid --batches '1,x'");
  expect_clean_error(sh("tune " + dir() + "/missing.onnx"), "missing.onnx");
  { std::ofstream(dir() + "/garbage.onnx") << "not a model"; }
  expect_clean_error(sh("tune " + dir() + "/garbage.onnx --no-svg"), "garbage.onnx");
  expect_clean_error(sh("tune " + m + kFast + " --latency-budget 0.000001 --no-svg --no-save"), "latency budget");
  Result nodir = sh("tune " + m + " --batches 1 --seconds-per-point 0 --no-save --svg " + dir() + "/no/such/dir/t.svg");
  expect_clean_error(nodir, "cannot write the chart");
  EXPECT_NE(nodir.out.find("recommended  batch 1"), std::string::npos) << nodir.out;
}

}  // namespace
