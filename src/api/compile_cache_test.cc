// Compile cache: a second load hits and runs identically, a damaged entry is recompiled,
// the key follows batch / optimize / model bytes, an unusable directory only disables caching.
#include "api/compile_cache.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <fstream>

#include "runtime/session.h"
#include "tools/random_inputs.h"
#include "tests/temp_dir.h"
#include "tools/zoo/zoo.h"

namespace systolic::api {
namespace {

std::string temp_dir(const std::string& name) { return systolic::testing::scratch_dir("cache_" + name); }

std::string write_model(const std::string& dir) {
  onnx::ModelProto m;
  EXPECT_TRUE(zoo::zoo_build("mobilenet_v2", 5, &m).ok());
  const std::string path = dir + "/mnv2.onnx";
  std::ofstream f(path, std::ios::binary);
  m.SerializeToOstream(&f);
  return path;
}

std::vector<uint8_t> run_once(const std::shared_ptr<const plan::Program>& p) {
  auto s = runtime::Session::create(p);
  EXPECT_TRUE(s.ok());
  tools::IoBuffers io = tools::make_io_buffers(**s, 9);
  EXPECT_TRUE((*s)->run_into(io.in_ptrs, io.out_ptrs).ok());
  return io.out[0].data;
}

TEST(CompileCache, SecondLoadHitsAndRunsIdentically) {
  const std::string dir = temp_dir("hit");
  const std::string model = write_model(dir);
  plan::CompileOptions co;
  auto a = compile_onnx_cached(model, co, dir + "/cache");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_FALSE(a->hit);
  ASSERT_FALSE(a->path.empty()) << a->note;
  EXPECT_EQ(a->path.rfind(dir + "/cache/", 0), 0u) << a->path;
  auto b = compile_onnx_cached(model, co, dir + "/cache");
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_TRUE(b->hit);
  EXPECT_EQ(b->path, a->path);
  EXPECT_TRUE(b->note.empty()) << b->note;
  EXPECT_EQ(plan::serialize_program(*a->program), plan::serialize_program(*b->program));
  EXPECT_EQ(run_once(a->program), run_once(b->program));
  // No temporary files are left behind.
  EXPECT_EQ(std::system(("test $(ls " + dir + "/cache | wc -l) -eq 1").c_str()), 0);
}

TEST(CompileCache, CorruptEntryIsRecompiled) {
  const std::string dir = temp_dir("corrupt");
  const std::string model = write_model(dir);
  plan::CompileOptions co;
  auto a = compile_onnx_cached(model, co, dir + "/cache");
  ASSERT_TRUE(a.ok() && !a->path.empty());
  const auto want = run_once(a->program);
  for (const char* damage : {"flip", "truncate", "garbage"}) {
    if (std::string(damage) == "flip") {
      std::fstream f(a->path, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(4000);
      f.put('\x5a');
    } else if (std::string(damage) == "truncate") {
      ASSERT_EQ(truncate(a->path.c_str(), 100), 0);
    } else {
      std::ofstream(a->path, std::ios::binary | std::ios::trunc) << "not a plan";
    }
    auto b = compile_onnx_cached(model, co, dir + "/cache");
    ASSERT_TRUE(b.ok()) << damage << ": " << b.status().message();
    EXPECT_FALSE(b->hit) << damage;
    EXPECT_NE(b->note.find("ignoring the cached plan"), std::string::npos) << damage << ": " << b->note;
    EXPECT_EQ(run_once(b->program), want) << damage;
    auto c = compile_onnx_cached(model, co, dir + "/cache");  // rewritten: a hit again
    ASSERT_TRUE(c.ok());
    EXPECT_TRUE(c->hit) << damage;
  }
}

TEST(CompileCache, KeyFollowsBatchOptimizeAndModel) {
  const std::string dir = temp_dir("key");
  const std::string model = write_model(dir);
  std::string bytes;
  {
    std::ifstream f(model, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(f), {});
  }
  plan::CompileOptions one, two, ref;
  two.batch = 2;
  ref.optimize = false;
  const std::string k1 = cache_key(model, bytes, one);
  EXPECT_EQ(k1, cache_key(model, bytes, one));
  EXPECT_NE(k1, cache_key(model, bytes, two));
  EXPECT_NE(k1, cache_key(model, bytes, ref));
  std::string other = bytes;
  other[other.size() / 2] ^= 1;
  EXPECT_NE(k1, cache_key(model, other, one));
  plan::CompileOptions avx2 = one;
  avx2.cpu = cap_isa(host_cpu(), "ref");
  avx2.cpu_set = true;
  if (plan::isa_name(avx2.cpu) != plan::isa_name(host_cpu())) {
    EXPECT_NE(k1, cache_key(model, bytes, avx2));
  }
  // Both batches end up as separate entries.
  auto a = compile_onnx_cached(model, one, dir + "/cache");
  auto b = compile_onnx_cached(model, two, dir + "/cache");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->path, b->path);
  EXPECT_EQ(b->program->batch, 2);
}

TEST(CompileCache, UnusableDirectoryOnlyDisablesCaching) {
  const std::string dir = temp_dir("unwritable");
  const std::string model = write_model(dir);
  { std::ofstream(dir + "/file") << "x"; }
  auto a = compile_onnx_cached(model, plan::CompileOptions{}, dir + "/file/cache");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_TRUE(a->path.empty());
  EXPECT_NE(a->note.find("compile cache disabled"), std::string::npos) << a->note;
  auto off = compile_onnx_cached(model, plan::CompileOptions{}, "");
  ASSERT_TRUE(off.ok());
  EXPECT_TRUE(off->path.empty() && off->note.empty() && !off->hit);
  auto missing = compile_onnx_cached(dir + "/missing.onnx", plan::CompileOptions{}, dir + "/cache");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot open"), std::string::npos) << missing.status().message();
}

}  // namespace
}  // namespace systolic::api
