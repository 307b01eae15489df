// The pipeline: every item is reported once, with the outputs a direct run gives for it;
// failed loads are reported and skipped without losing the rest; several sessions share work.
#include "runtime/pipeline.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "tests/graph_builder.h"

namespace systolic::testing {
namespace {

// [B,3,6,6] -> conv -> relu -> global pool -> [B,5]: each row depends on its item only.
std::shared_ptr<plan::Program> tiny_plan(int64_t batch) {
  GraphBuilder b;
  const int x = b.input("x", {batch, 3, 6, 6});
  const int c = b.node(ir::Op::Conv, {x, b.weights("w", {5, 3, 3, 3}), b.weights("b", {5})})[0];
  const int r = b.node(ir::Op::Relu, {c})[0];
  const int p = b.node(ir::Op::GlobalAveragePool, {r})[0];
  b.output(b.node(ir::Op::Flatten, {p})[0]);
  plan::CompileOptions co;
  co.batch = batch;
  auto prog = plan::compile(b.g, co);
  if (!prog.ok()) throw std::runtime_error(prog.status().message());
  return *prog;
}

void fill_item(std::size_t item, float* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<float>((item * 31 + i * 7) % 17) / 8.f - 1.f;
}

// What one item gives when run alone (batch 1 plan with the same weights).
std::vector<float> direct(const std::shared_ptr<plan::Program>& one, std::size_t item) {
  auto s = runtime::Session::create(one);
  runtime::HostTensor x = runtime::HostTensor::zeros(ir::DType::f32, {1, 3, 6, 6});
  fill_item(item, x.as<float>(), 108);
  std::vector<runtime::HostTensor> out;
  EXPECT_TRUE((*s)->run({{"x", x}}, &out).ok());
  return std::vector<float>(out[0].as<float>(), out[0].as<float>() + 5);
}

struct Collected {
  std::map<std::size_t, std::vector<float>> rows;
  std::map<std::size_t, std::string> errors;
  int duplicates = 0;
};

Collected run(int64_t batch, std::size_t count, int instances, int loaders, bool trace,
              runtime::PipelineReport* rep_out = nullptr) {
  auto plan = tiny_plan(batch);
  std::vector<std::unique_ptr<runtime::Session>> owned;
  std::vector<runtime::Session*> sessions;
  for (int i = 0; i < instances; ++i) {
    owned.push_back(std::move(*runtime::Session::create(plan)));
    sessions.push_back(owned.back().get());
  }
  auto load = [](int, std::size_t item, uint8_t* dst) {
    if (item % 7 == 3) return Err("item %zu is corrupt", item);
    fill_item(item, reinterpret_cast<float*>(dst), 108);
    return Status::Ok();
  };
  Collected c;
  auto result = [&](std::size_t item, const Status& st, const std::vector<const void*>& outs, double ms) {
    EXPECT_GE(ms, 0.0);
    if (c.rows.count(item) || c.errors.count(item)) ++c.duplicates;
    if (!st.ok()) {
      EXPECT_TRUE(outs.empty());
      c.errors[item] = st.message();
      return;
    }
    const float* r = static_cast<const float*>(outs[0]);
    c.rows[item] = std::vector<float>(r, r + 5);
  };
  runtime::PipelineOptions po;
  po.loaders = loaders;
  auto rep = runtime::run_pipeline(sessions, count, load, result, po, trace);
  EXPECT_TRUE(rep.ok()) << rep.status().message();
  if (rep_out) *rep_out = *rep;
  return c;
}

}  // namespace

TEST(Pipeline, EveryItemOnceWithItsOwnResult) {
  const auto one = tiny_plan(1);
  for (int64_t batch : {1, 4}) {
    for (int instances : {1, 2}) {
      runtime::PipelineReport rep;
      const std::size_t count = 23;  // not a multiple of the batch: a short last batch
      Collected c = run(batch, count, instances, 2, true, &rep);
      EXPECT_EQ(c.duplicates, 0);
      EXPECT_EQ(c.rows.size() + c.errors.size(), count);
      EXPECT_EQ(c.errors.size(), 3u);  // items 3, 10, 17
      EXPECT_NE(c.errors[10].find("item 10 is corrupt"), std::string::npos);
      for (std::size_t item : {0u, 5u, 22u}) EXPECT_LT(max_rel_error(c.rows[item], direct(one, item)), 1e-5) << item;
      EXPECT_EQ(rep.items, 20);
      EXPECT_EQ(rep.failed, 3);
      EXPECT_EQ(rep.latency_ms.size(), 20u);
      ASSERT_EQ(rep.stages.size(), 4u);
      EXPECT_EQ(rep.stages[0].work, 23);  // every item loaded once
      EXPECT_EQ(rep.stages[2].threads, instances);
      EXPECT_NE(rep.bottleneck(), nullptr);
      EXPECT_FALSE(rep.events.empty());
    }
  }
}

TEST(Pipeline, NothingToDoAndAllFailing) {
  Collected none = run(2, 0, 1, 1, false);
  EXPECT_TRUE(none.rows.empty());
  // Items 3 and 10 of 11 fail; the rest still arrive (and a batch of only failures passes through).
  Collected some = run(1, 11, 1, 3, false);
  EXPECT_EQ(some.rows.size(), 9u);
  EXPECT_EQ(some.errors.size(), 2u);
}

TEST(Pipeline, RefusesMismatchedSessions) {
  auto a = tiny_plan(2), b = tiny_plan(2);
  auto sa = runtime::Session::create(a), sb = runtime::Session::create(b);
  std::vector<runtime::Session*> two = {sa->get(), sb->get()};
  auto rep = runtime::run_pipeline(two, 4, [](int, std::size_t, uint8_t*) { return Status::Ok(); },
                                   [](std::size_t, const Status&, const std::vector<const void*>&, double) {});
  ASSERT_FALSE(rep.ok());
  EXPECT_NE(rep.status().message().find("same plan"), std::string::npos);
}

}  // namespace systolic::testing
