// Compile cache: a second load hits and runs identically, a damaged entry is recompiled,
// the key follows batch / optimize / model bytes, an unusable directory only disables caching,
// SYSTOLIC_CACHE_MAX caps the entries (least recently used out first).
#include "api/compile_cache.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
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

// Sets an environment variable for one scope.
struct ScopedEnv {
  std::string name;
  ScopedEnv(const char* n, const char* v) : name(n) { setenv(n, v, 1); }
  ~ScopedEnv() { unsetenv(name.c_str()); }
};

TEST(CompileCache, SizeCapParsesAndRefusesNonsense) {
  std::string note;
  EXPECT_EQ(cache_max_bytes(&note), uint64_t(2) << 30);  // unset: 2 GiB
  const std::pair<const char*, uint64_t> good[] = {{"1024", 1024},       {"500M", uint64_t(500) << 20},
                                                    {"2G", uint64_t(2) << 30}, {"64KiB", uint64_t(64) << 10},
                                                    {"3gb", uint64_t(3) << 30}, {"0", 0}};
  for (const auto& [v, want] : good) {
    ScopedEnv e("SYSTOLIC_CACHE_MAX", v);
    note.clear();
    EXPECT_EQ(cache_max_bytes(&note), want) << v;
    EXPECT_TRUE(note.empty()) << v << ": " << note;
  }
  for (const char* v : {"abc", "5X", "-1", "12MBx", "99999999999999999999G"}) {
    ScopedEnv e("SYSTOLIC_CACHE_MAX", v);
    note.clear();
    EXPECT_EQ(cache_max_bytes(&note), uint64_t(2) << 30) << v;
    EXPECT_NE(note.find("SYSTOLIC_CACHE_MAX"), std::string::npos) << v;
  }
}

TEST(CompileCache, EvictsLeastRecentlyUsedPlansOnly) {
  const std::string dir = temp_dir("lru");
  auto make = [&](const std::string& name, long age_s) {
    const std::string path = dir + "/" + name;
    std::ofstream(path, std::ios::binary) << std::string(100, 'x');
    struct timespec t[2];
    clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= age_s;
    t[1] = t[0];
    EXPECT_EQ(utimensat(AT_FDCWD, path.c_str(), t, 0), 0);
    return path;
  };
  const std::string a = make("a.plan", 300), b = make("b.plan", 200), c = make("c.plan", 100);
  const std::string tmp = make("d.plan.tmp.42", 400), other = make("notes.json", 500);
  auto exists = [](const std::string& p) { return access(p.c_str(), F_OK) == 0; };
  evict_lru(dir, 250, c);  // 300 bytes of plans: the oldest goes
  EXPECT_FALSE(exists(a));
  EXPECT_TRUE(exists(b) && exists(c));
  EXPECT_TRUE(exists(tmp) && exists(other));  // a writer's temporary and other files are not entries
  evict_lru(dir, 50, c);  // the entry just written stays even where it alone is over the cap
  EXPECT_FALSE(exists(b));
  EXPECT_TRUE(exists(c));
}

TEST(CompileCache, CapEvictsOlderEntriesAndZeroTurnsCachingOff) {
  const std::string dir = temp_dir("cap");
  const std::string model = write_model(dir);
  plan::CompileOptions one, two;
  two.batch = 2;
  {
    ScopedEnv e("SYSTOLIC_CACHE_MAX", "1");  // room for the newest entry only
    auto a = compile_onnx_cached(model, one, dir + "/cache");
    ASSERT_TRUE(a.ok() && !a->path.empty()) << (a.ok() ? a->note : a.status().message());
    auto b = compile_onnx_cached(model, two, dir + "/cache");
    ASSERT_TRUE(b.ok() && !b->path.empty());
    EXPECT_NE(access(a->path.c_str(), F_OK), 0) << "the older entry was evicted";
    auto again = compile_onnx_cached(model, two, dir + "/cache");
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(again->hit);
  }
  ScopedEnv e("SYSTOLIC_CACHE_MAX", "0");
  auto off = compile_onnx_cached(model, one, dir + "/cache2");
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->hit);
  EXPECT_TRUE(off->path.empty());
  EXPECT_NE(access((dir + "/cache2").c_str(), F_OK), 0);
}

}  // namespace
}  // namespace systolic::api
