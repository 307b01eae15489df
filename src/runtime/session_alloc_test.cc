// Session::run_into performs no heap allocation in steady state: global operator new is
// replaced here by a counting version (it serves the whole test binary).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "frontend/onnx/import.h"
#include "runtime/pipeline.h"
#include "tests/graph_builder.h"
#include "tools/random_inputs.h"
#include "tools/trace_json.h"
#include "tools/zoo/zoo.h"

// GCC sees free() on memory from the (replaced) operator new: that is the point here.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_news{0};

void* counted(std::size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_news.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(n ? n : 1);
}
void* counted_aligned(std::size_t n, std::align_val_t a) {
  if (g_counting.load(std::memory_order_relaxed)) g_news.fetch_add(1, std::memory_order_relaxed);
  const std::size_t al = static_cast<std::size_t>(a);
  return std::aligned_alloc(al, (std::max<std::size_t>(n, 1) + al - 1) / al * al);
}
}  // namespace

void* operator new(std::size_t n) {
  if (void* p = counted(n)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = counted(n)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return counted(n); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return counted(n); }
void* operator new(std::size_t n, std::align_val_t a) {
  if (void* p = counted_aligned(n, a)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) {
  if (void* p = counted_aligned(n, a)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace systolic::testing {
namespace {

// Allocations made by 10 steady-state run_into calls (after one warm-up call).
long allocations_in_steady_state(runtime::Session& s, tools::IoBuffers& io) {
  EXPECT_TRUE(s.run_into(io.in_ptrs, io.out_ptrs).ok());
  g_news = 0;
  g_counting = true;
  bool ok = true;
  for (int i = 0; i < 10; ++i) ok &= s.run_into(io.in_ptrs, io.out_ptrs).ok();
  g_counting = false;
  EXPECT_TRUE(ok);
  return g_news.load();
}

std::unique_ptr<runtime::Session> session_for(const ir::Graph& g, int threads) {
  auto p = plan::compile(g, plan::CompileOptions{});
  EXPECT_TRUE(p.ok()) << p.status().message();
  runtime::SessionOptions so;
  so.threads = threads;
  auto s = runtime::Session::create(*p, so);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return std::move(*s);
}

ir::Graph small_conv_net() {
  GraphBuilder b;
  const int x = b.input("image", {2, 3, 20, 20});
  const int c1 = b.node(ir::Op::Conv, {x, b.weights("w1", {16, 3, 3, 3}), b.weights("b1", {16})})[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  const int r1 = b.node(ir::Op::Relu, {c1})[0];
  const int c2 = b.node(ir::Op::Conv, {r1, b.weights("w2", {16, 16, 3, 3})})[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  const int add = b.node(ir::Op::Add, {c2, r1})[0];
  const int mp = b.node(ir::Op::MaxPool, {add})[0];
  b.last().set_ints("kernel_shape", {2, 2});
  b.last().set_ints("strides", {2, 2});
  const int gap = b.node(ir::Op::GlobalAveragePool, {mp})[0];
  const int fl = b.node(ir::Op::Flatten, {gap})[0];
  const int fc = b.node(ir::Op::Gemm, {fl, b.weights("fc", {10, 16}), b.weights("fcb", {10})})[0];
  b.last().set_i("transB", 1);
  b.output(fc);
  return b.g;
}

TEST(SessionAllocations, SmallConvNetRunsWithoutAllocating) {
  for (int threads : {1, 2}) {
    auto s = session_for(small_conv_net(), threads);
    EXPECT_TRUE(s->allocating_steps().empty());
    auto io = tools::make_io_buffers(*s, 3);
    EXPECT_EQ(allocations_in_steady_state(*s, io), 0) << threads << " threads";
    // run_into computes what run computes; run allocates, so the counter does count.
    std::vector<runtime::HostTensor> outs;
    g_news = 0;
    g_counting = true;
    ASSERT_TRUE(s->run({{"image", io.in[0]}}, &outs).ok());
    g_counting = false;
    EXPECT_GT(g_news.load(), 0);
    EXPECT_EQ(outs[0].data, io.out[0].data);
  }
}

// An int8 plan's uint8 steps: a squeeze-excitation gate (its multipliers), tables, convs.
TEST(SessionAllocations, Int8GateAndTablesRunWithoutAllocating) {
  using ir::Op;
  GraphBuilder b;
  const int y = qdq_squeeze_excitation(b, b.input("image", {2, 8, 6, 6}));
  const int h = qdq(b, b.node(Op::HardSwish, {y})[0], 0.02f, 20, "h");
  b.output(b.node(Op::Conv, {h, int8_weights(b, "w2", {4, 16, 1, 1}, {0.01f})})[0]);
  plan::CompileOptions co;
  co.precision = passes::Precision::int8;
  auto p = plan::compile(b.g, co);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(count_tables((*p)->graph), 2) << (*p)->kernel_log;
  for (int threads : {1, 2}) {
    runtime::SessionOptions so;
    so.threads = threads;
    auto s = runtime::Session::create(*p, so);
    ASSERT_TRUE(s.ok()) << s.status().message();
    auto io = tools::make_io_buffers(**s, 3);
    EXPECT_EQ(allocations_in_steady_state(**s, io), 0) << threads << " threads";
  }
}

TEST(SessionAllocations, ZooModelRunsWithoutAllocatingEvenWhenTraced) {
  onnx::ModelProto m;
  ASSERT_TRUE(zoo::zoo_build("mobilenet_v2", 1, &m).ok());
  auto g = frontend::import_onnx_bytes(m.SerializeAsString(), ".");
  ASSERT_TRUE(g.ok()) << g.status().message();
  auto s = session_for(*g, 2);
  EXPECT_TRUE(s->allocating_steps().empty());
  auto io = tools::make_io_buffers(*s, 1);
  EXPECT_EQ(allocations_in_steady_state(*s, io), 0);
  s->set_trace(11);  // the warm-up run + 10
  EXPECT_EQ(allocations_in_steady_state(*s, io), 0);
  const std::size_t steps = s->profile().size();
  ASSERT_EQ(s->trace().size(), 11 * (steps + 1));
  int runs = 0;
  for (const auto& e : s->trace()) {
    EXPECT_GE(e.dur_ns, 0);
    runs += e.step < 0;
  }
  EXPECT_EQ(runs, 11);
  // The buffer is full: further runs record nothing and still do not allocate.
  EXPECT_EQ(allocations_in_steady_state(*s, io), 0);
  EXPECT_EQ(s->trace().size(), 11 * (steps + 1));
  EXPECT_NE(tools::chrome_trace_json(*s).find("\"ph\":\"X\""), std::string::npos);
}

// The pipeline's pools are sized once: a run of 48 items allocates exactly what a run of 8
// does (threads, pools), so nothing is allocated per item or per batch.
TEST(SessionAllocations, PipelineAllocatesNothingPerItem) {
  auto s = session_for(small_conv_net(), 1);
  const std::size_t row = s->inputs()[0].bytes() / 2;
  auto load = [&](int, std::size_t item, uint8_t* dst) {
    std::memset(dst, 0, row);
    reinterpret_cast<float*>(dst)[item % (row / 4)] = 1.f;
    return Status::Ok();
  };
  std::atomic<long> seen{0};
  auto result = [&](std::size_t, const Status&, const std::vector<const void*>&, double) { ++seen; };
  std::vector<runtime::Session*> sessions = {s.get()};
  auto allocations = [&](std::size_t count) {
    g_news = 0;
    g_counting = true;
    auto rep = runtime::run_pipeline(sessions, count, load, result);
    g_counting = false;
    EXPECT_TRUE(rep.ok()) << rep.status().message();
    return g_news.load();
  };
  allocations(4);  // warm-up
  const long few = allocations(8), many = allocations(48);
  EXPECT_EQ(few, many);
  EXPECT_EQ(seen.load(), 4 + 8 + 48);
}

TEST(SessionAllocations, RunIntoChecksItsBuffers) {
  auto s = session_for(small_conv_net(), 1);
  auto io = tools::make_io_buffers(*s, 3);
  Status st = s->run_into({}, io.out_ptrs);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("1 inputs"), std::string::npos) << st.message();
  st = s->run_into({nullptr}, io.out_ptrs);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("null"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace systolic::testing
