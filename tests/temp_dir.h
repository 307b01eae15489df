// Per-process scratch directories for tests, removed when the process exits: ctest runs every
// test in a process of its own, and each would otherwise leave its models, plans and compile
// cache behind (hundreds of MiB per run of the suite).
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace systolic::testing {

struct ScratchDirs {
  std::vector<std::string> dirs;
  ~ScratchDirs() {
    std::error_code ec;
    for (const auto& d : dirs) std::filesystem::remove_all(d, ec);
  }
};

// TempDir()/systolic_<tag>_<pid>, made fresh on first use in this process and removed at its exit.
inline std::string scratch_dir(const std::string& tag) {
  static ScratchDirs made;
  const std::string d = ::testing::TempDir() + "systolic_" + tag + "_" + std::to_string(getpid());
  for (const auto& m : made.dirs)
    if (m == d) return d;
  std::error_code ec;
  std::filesystem::remove_all(d, ec);
  std::filesystem::create_directories(d, ec);
  made.dirs.push_back(d);
  return d;
}

}  // namespace systolic::testing
