// `systolic simulate` end to end: the host check's verdict on a zoo ResNet-18 (the total within
// 25% of the measured latency, Spearman >= 0.9 over the steps' times).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "tests/cli_run.h"

namespace {

using Result = systolic::testing::CliResult;

std::string dir() {
  static const std::string d = systolic::testing::cli_dir("cli_simulate");
  return d;
}

Result sh(const std::string& args) { return systolic::testing::run_cli(dir(), args); }

const std::string& resnet18() {
  static const std::string m = systolic::testing::zoo_model(dir(), "resnet18");
  return m;
}

nlohmann::json json_of(const Result& r) {
  EXPECT_EQ(r.status, 0) << r.err;
  return nlohmann::json::parse(r.out, nullptr, false);
}

}  // namespace

// One thread: a 2-thread run waits a scheduler slice at every dispatch whenever another process
// holds a core of a shared machine, which no host model predicts.
TEST(CliSimulate, HostCheckVerdictOnResNet18) {
  const auto j = json_of(sh("simulate " + resnet18() + " --target host --check --threads 1 --iters 10 --json"));
  ASSERT_TRUE(j.is_object());
  const double err = j["error_pct"].get<double>(), rho = j["spearman"].get<double>();
  EXPECT_LE(std::abs(err), 25.0) << "predicted " << j["predicted_ms"] << " ms, measured " << j["measured_ms"] << " ms";
  EXPECT_GE(rho, 0.9);
  EXPECT_GE(j["ranked_steps"].get<int>(), 25);
  EXPECT_EQ(j["verdict"]["pass"].get<bool>(), std::abs(err) <= 25.0 && rho >= 0.9);
  EXPECT_TRUE(j.contains("top5_match"));  // kept as information
}
