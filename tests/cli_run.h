// Running the systolic binary from tests: a private temp directory and compile cache per test
// file, captured stdout/stderr, and the check that an error is one clean line.
#pragma once
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/temp_dir.h"

namespace systolic::testing {

struct CliResult {
  int status = -1;  // exit code; -1 when killed by a signal
  std::string out, err;
};

// A directory for this test process's files, `tag` naming the test file (removed at exit).
inline std::string cli_dir(const std::string& tag) { return scratch_dir(tag); }

inline std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs `systolic ARGS` with SYSTOLIC_CACHE_DIR=dir/cache_name, so tests neither read nor fill
// the user's compile cache or tuned configurations.
inline CliResult run_cli(const std::string& dir, const std::string& args, const std::string& cache_name = "cache") {
  const std::string out = dir + "/stdout", err = dir + "/stderr";
  const std::string cmd = "SYSTOLIC_CACHE_DIR=" + dir + "/" + cache_name + " " + std::string(SYSTOLIC_BINARY) + " " +
                          args + " > " + out + " 2> " + err;
  const int rc = std::system(cmd.c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, slurp(out), slurp(err)};
}

// stderr without progress lines (compile cache, tune points, tuned configuration).
// Writes zoo model `name` into `dir` (once per process: callers keep the path in a static).
inline std::string zoo_model(const std::string& dir, const std::string& name) {
  const std::string p = dir + "/" + name + ".onnx";
  EXPECT_EQ(run_cli(dir, "zoo " + name + " -o " + p).status, 0);
  return p;
}

inline std::string errors_only(const std::string& err) {
  std::string out, line;
  std::istringstream in(err);
  while (std::getline(in, line))
    if (line.rfind("systolic: compiled in ", 0) != 0 && line.rfind("systolic: using cached plan ", 0) != 0 &&
        line.rfind("systolic: tune: ", 0) != 0 && line.rfind("systolic: using tuned configuration ", 0) != 0)
      out += line + "\n";
  return out;
}

// Exit status 1 and exactly one line "systolic: error: ..." containing `needle`.
inline void expect_clean_error(const CliResult& r, const std::string& needle) {
  const std::string err = errors_only(r.err);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(err.rfind("systolic: error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << r.err;
  EXPECT_NE(err.find(needle), std::string::npos) << r.err;
}

}  // namespace systolic::testing
