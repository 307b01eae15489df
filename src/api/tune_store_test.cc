// The tune store: a saved recommendation reads back, is found by content (not by path), and
// is not found for other content or precision; damaged entries are errors, not crashes.
#include "api/tune_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/temp_dir.h"
#include "tests/tiny_onnx.h"

namespace systolic::api {
namespace {

// Points the cache at a fresh directory for one test and restores the environment after.
class TuneStore : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* old = std::getenv("SYSTOLIC_CACHE_DIR");
    had_ = old != nullptr;
    if (had_) old_ = old;
    dir_ = systolic::testing::scratch_dir(std::string("tune_store_") +
                                          ::testing::UnitTest::GetInstance()->current_test_info()->name());
    setenv("SYSTOLIC_CACHE_DIR", (dir_ + "/cache").c_str(), 1);
  }
  void TearDown() override {
    if (had_) setenv("SYSTOLIC_CACHE_DIR", old_.c_str(), 1);
    else unsetenv("SYSTOLIC_CACHE_DIR");
  }
  std::string write(const std::string& name, const std::string& bytes) {
    const std::string p = dir_ + "/" + name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  std::string dir_, old_;
  bool had_ = false;
};

TunedConfig sample() {
  TunedConfig c;
  c.batch = 16;
  c.threads = 2;
  c.instances = 3;
  c.throughput_per_s = 123.5;
  c.p99_ms = 45.25;
  c.peak_bytes = 987654321;
  return c;
}

TEST_F(TuneStore, RoundTrip) {
  const std::string model = write("m.onnx", testing::tiny_conv_onnx(1));
  auto before = load_tuned(model);
  ASSERT_TRUE(before.ok()) << before.status().message();
  EXPECT_FALSE(before->has_value());
  ASSERT_TRUE(save_tuned(model, "fp32", sample()).ok());
  auto after = load_tuned(model, "fp32");
  ASSERT_TRUE(after.ok()) << after.status().message();
  ASSERT_TRUE(after->has_value());
  const TunedConfig& c = **after;
  EXPECT_EQ(c.batch, 16);
  EXPECT_EQ(c.threads, 2);
  EXPECT_EQ(c.instances, 3);
  EXPECT_DOUBLE_EQ(c.throughput_per_s, 123.5);
  EXPECT_DOUBLE_EQ(c.p99_ms, 45.25);
  EXPECT_EQ(c.peak_bytes, 987654321);
  EXPECT_EQ(c.path.rfind(dir_ + "/cache/tune/", 0), 0u) << c.path;
  EXPECT_EQ(c.path, *tuned_path(model, "fp32"));
  struct stat sb;
  EXPECT_EQ(stat(c.path.c_str(), &sb), 0);
}

TEST_F(TuneStore, KeyedByContentAndPrecision) {
  const std::string model = write("m.onnx", testing::tiny_conv_onnx(1));
  ASSERT_TRUE(save_tuned(model, "fp32", sample()).ok());
  // The same bytes under another name: found. Other bytes under the same name: not found.
  const std::string copy = write("copy.onnx", testing::tiny_conv_onnx(1));
  auto same = load_tuned(copy);
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->has_value());
  EXPECT_FALSE(load_tuned(model, "bf16")->has_value());
  write("m.onnx", testing::tiny_conv_onnx(2));
  auto other = load_tuned(model);
  ASSERT_TRUE(other.ok()) << other.status().message();
  EXPECT_FALSE(other->has_value());
  // Saving for the new content leaves the old entry alone.
  TunedConfig c2 = sample();
  c2.batch = 4;
  ASSERT_TRUE(save_tuned(model, "fp32", c2).ok());
  EXPECT_EQ((*load_tuned(model))->batch, 4);
  EXPECT_EQ((*load_tuned(copy))->batch, 16);
}

TEST_F(TuneStore, DamagedOrForeignEntriesAreErrors) {
  const std::string model = write("m.onnx", testing::tiny_conv_onnx(1));
  ASSERT_TRUE(save_tuned(model, "fp32", sample()).ok());
  const std::string path = *tuned_path(model, "fp32");
  std::stringstream ss;
  ss << std::ifstream(path).rdbuf();
  const std::string good = ss.str();
  std::ofstream(path) << good.substr(0, good.size() / 2);
  auto cut = load_tuned(model);
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("not valid JSON; rerun systolic tune"), std::string::npos) << cut.status().message();
  auto j = nlohmann::json::parse(good);
  j["host"]["cores"] = j["host"]["cores"].get<int>() + 1;
  std::ofstream(path) << j.dump();
  auto foreign = load_tuned(model);
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.status().message().find("another model, precision or host"), std::string::npos);
  j = nlohmann::json::parse(good);
  j["threads"] = 0;
  std::ofstream(path) << j.dump();
  EXPECT_FALSE(load_tuned(model).ok());
  j.erase("threads");
  std::ofstream(path) << j.dump();
  EXPECT_FALSE(load_tuned(model).ok());
}

TEST_F(TuneStore, BadArgumentsAreErrors) {
  TunedConfig c = sample();
  c.batch = 0;
  const std::string model = write("m.onnx", testing::tiny_conv_onnx(1));
  EXPECT_FALSE(save_tuned(model, "fp32", c).ok());
  auto missing = load_tuned(dir_ + "/missing.onnx");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot open"), std::string::npos);
  // An unusable cache directory: saving fails with a message, nothing crashes.
  write("file", "x");
  setenv("SYSTOLIC_CACHE_DIR", (dir_ + "/file/sub").c_str(), 1);
  EXPECT_FALSE(save_tuned(model, "fp32", sample()).ok());
  EXPECT_FALSE(load_tuned(model)->has_value());
}

}  // namespace
}  // namespace systolic::api
