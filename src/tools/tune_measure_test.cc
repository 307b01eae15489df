// One tune measurement on a real plan: the footprint estimate against the RSS the sessions
// really add, the memory budget backing off instead of allocating, and concurrent instances
// computing what a single session computes.
#include "tools/percentile.h"
#include "tools/tune_measure.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdio>
#include <cstring>

#include "tests/graph_builder.h"
#include "tools/multi_instance.h"
#include "tools/tune_sweep.h"

namespace systolic::tools {
namespace {

// Conv 3x3 + Relu on [batch,16,128,128]: 1 MiB per activation of batch 1.
std::shared_ptr<const plan::Program> conv_plan(int64_t batch) {
  testing::GraphBuilder b;
  const int x = b.input("x", {batch, 16, 128, 128});
  const int c = b.node(ir::Op::Conv, {x, b.weights("w", {16, 16, 3, 3}), b.weights("bias", {16})})[0];
  b.last().set_ints("pads", {1, 1, 1, 1});
  b.output(b.node(ir::Op::Relu, {c})[0]);
  plan::CompileOptions co;
  co.batch = batch;
  auto p = plan::compile(b.g, co);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return *p;
}

// Read independently of the code under test.
int64_t rss_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  long pages = 0, resident = 0;
  if (!f) return -1;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
  std::fclose(f);
  return resident * sysconf(_SC_PAGESIZE);
}

TEST(TuneMeasure, FootprintEstimateMatchesTheMemorySessionsAdd) {
  auto p = conv_plan(2);
  const Footprint f = estimate_footprint(*p);
  int64_t io = 0;
  for (int id : p->graph.inputs) io += static_cast<int64_t>(p->graph.t(id).bytes());
  for (int id : p->graph.outputs) io += static_cast<int64_t>(p->graph.t(id).bytes());
  EXPECT_EQ(io, 2 * 2 * 16 * 128 * 128 * 4);  // input and output, batch 2
  EXPECT_GE(f.per_instance, io + p->graph.arena_bytes);
  EXPECT_GE(f.weights, 16 * 16 * 9 * 4);
  EXPECT_EQ(f.total(3), f.weights + 3 * f.per_instance);
  malloc_trim(0);  // freed heap is not resident, so reusing it counts as growth
  const int64_t before = rss_bytes();
  if (before < 0) GTEST_SKIP() << "no /proc/self/statm";
  auto inst = open_instances(p, 4, 1);
  ASSERT_TRUE(inst.ok()) << inst.status().message();
  ASSERT_TRUE(run_instances(*inst, 1, 0).ok());  // touches every buffer
  const double grown = static_cast<double>(rss_bytes() - before);
  const double predicted = 4.0 * static_cast<double>(f.per_instance);
  EXPECT_GT(grown, 0.8 * predicted) << grown / 1048576 << " MiB vs " << predicted / 1048576;
  EXPECT_LT(grown, 1.25 * predicted) << grown / 1048576 << " MiB vs " << predicted / 1048576;
}

TEST(TuneMeasure, MeasuresAConfiguration) {
  auto p = conv_plan(2);
  MeasureOptions mo;
  mo.seconds = 0.05;
  mo.min_runs = 3;
  auto r = measure_config(p, {2, 1}, mo);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->fits) << r->note;
  EXPECT_EQ(r->batch, 2);
  EXPECT_GE(r->runs, 6);
  EXPECT_GT(r->throughput_per_s, 0);
  EXPECT_GT(r->p50_ms, 0);
  EXPECT_GE(r->p99_ms, r->p50_ms);
  EXPECT_EQ(r->estimate_bytes, estimate_footprint(*p).total(2));
  // The process holds at least the two instances' buffers while they run.
  EXPECT_GT(r->peak_bytes, 2 * estimate_footprint(*p).per_instance);
}

TEST(TuneMeasure, MemoryBudgetBacksOffBeforeAllocating) {
  auto p = conv_plan(2);
  const int64_t per = estimate_footprint(*p).per_instance;
  MeasureOptions mo;
  mo.seconds = 0;
  mo.min_runs = 1;
  // Room for one more instance but not two (over a baseline without freed heap).
  malloc_trim(0);
  mo.memory_budget = rss_bytes() + per * 3 / 2;
  auto one = measure_config(p, {1, 1}, mo);
  ASSERT_TRUE(one.ok());
  EXPECT_TRUE(one->fits) << one->note;
  auto two = measure_config(p, {2, 1}, mo);
  ASSERT_TRUE(two.ok());
  EXPECT_FALSE(two->fits);
  EXPECT_EQ(two->note.rfind("does not fit: ", 0), 0u) << two->note;
  EXPECT_NE(two->note.find("2 instances"), std::string::npos) << two->note;
  EXPECT_EQ(two->runs, 0);
}

TEST(TuneMeasure, ATinyBudgetFitsNothingAndTheSweepSaysSo) {
  auto p = conv_plan(1);
  MeasureOptions mo;
  mo.seconds = 0;
  mo.min_runs = 1;
  mo.memory_budget = 1024;
  SweepOptions so;
  so.splits = thread_splits(2);
  so.budgets.memory_bytes = mo.memory_budget;
  int calls = 0;
  auto rows = run_sweep(so, [&](int64_t, const Split& s) {
    ++calls;
    return measure_config(p, s, mo);
  });
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(calls, 2);  // batch 1 for each split; nothing larger is tried
  for (const TuneRow& r : *rows) {
    EXPECT_FALSE(r.fits);
    EXPECT_NE(r.note.find("> budget 1.0 KiB"), std::string::npos) << r.note;
  }
  auto best = recommend(*rows, so.budgets);
  ASSERT_FALSE(best.ok());
  EXPECT_EQ(best.status().message().rfind("no configuration fits: does not fit", 0), 0u) << best.status().message();
}

TEST(MultiInstance, EveryInstanceComputesWhatOneSessionComputes) {
  auto p = conv_plan(1);
  auto inst = open_instances(p, 3, 1);
  ASSERT_TRUE(inst.ok()) << inst.status().message();
  auto runs = run_instances(*inst, 2, 0);
  ASSERT_TRUE(runs.ok()) << runs.status().message();
  EXPECT_EQ(runs->runs, 6);
  EXPECT_EQ(runs->latency_ms.size(), 6u);
  EXPECT_GT(runs->wall_s, 0);
  auto single = runtime::Session::create(p);
  ASSERT_TRUE(single.ok());
  for (std::size_t k = 0; k < 3; ++k) {
    std::vector<runtime::HostTensor> outs;
    ASSERT_TRUE((*single)->run({{"x", inst->io[k].in[0]}}, &outs).ok());
    ASSERT_EQ(outs[0].data.size(), inst->io[k].out[0].data.size());
    EXPECT_EQ(std::memcmp(outs[0].data.data(), inst->io[k].out[0].data.data(), outs[0].data.size()), 0) << k;
  }
  // Different inputs per instance, so the comparison above is not trivially the same run.
  EXPECT_NE(inst->io[0].in[0].data, inst->io[1].in[0].data);
  EXPECT_FALSE(open_instances(p, 0, 1).ok());
}

TEST(MultiInstance, Percentile) {
  EXPECT_DOUBLE_EQ(percentile({3, 1, 2}, 0.5), 2);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 0.99), 10.9);
  EXPECT_DOUBLE_EQ(percentile({}, 0.5), 0);
}

}  // namespace
}  // namespace systolic::tools
