// The tune sweep's control (which points get measured, when it stops, the refinement point),
// the recommendation rule on hand-made rows, size parsing, thread splits and the SVG chart.
#include <gtest/gtest.h>

#include <map>
#include <regex>

#include "tools/tune_svg.h"
#include "tools/tune_sweep.h"

namespace systolic::tools {
namespace {

constexpr int64_t kMiB = 1 << 20;

TuneRow row(int64_t batch, Split s, double thr, double p99, int64_t mem = 100 * kMiB, bool fits = true) {
  TuneRow r;
  r.batch = batch;
  r.split = s;
  r.fits = fits;
  r.throughput_per_s = fits ? thr : 0;
  r.p50_ms = p99 / 2;
  r.p99_ms = fits ? p99 : 0;
  r.peak_bytes = fits ? mem : 0;
  r.estimate_bytes = mem;
  if (!fits) r.note = "does not fit: test";
  return r;
}

std::vector<TuneRow> table() {
  return {row(1, {1, 2}, 100, 10), row(4, {1, 2}, 300, 40), row(4, {2, 1}, 280, 35),
          row(8, {2, 1}, 350, 90, 900 * kMiB), row(16, {1, 2}, 0, 0, 2000 * kMiB, false)};
}

TEST(TuneRecommend, HighestThroughputWithinTheBudgets) {
  const auto rows = table();
  auto none = recommend(rows, {});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, 3u);  // 350 img/s; the row that does not fit never counts
  auto lat = recommend(rows, {50, 0});
  ASSERT_TRUE(lat.ok());
  EXPECT_EQ(*lat, 1u);  // 300 img/s at p99 40 ms; 350 img/s has p99 90 ms
  auto lat_tight = recommend(rows, {38, 0});
  ASSERT_TRUE(lat_tight.ok());
  EXPECT_EQ(*lat_tight, 2u);
  auto mem = recommend(rows, {0, 500 * kMiB});
  ASSERT_TRUE(mem.ok());
  EXPECT_EQ(*mem, 1u);
}

TEST(TuneRecommend, TiesGoToLowerLatencyThenSmallerBatch) {
  std::vector<TuneRow> rows = {row(8, {1, 2}, 200, 50), row(4, {2, 1}, 200, 30), row(2, {1, 2}, 200, 30)};
  auto r = recommend(rows, {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, 2u);
}

TEST(TuneRecommend, NothingWithinTheBudgetsIsAClearError) {
  auto lat = recommend(table(), {5, 0});
  ASSERT_FALSE(lat.ok());
  EXPECT_NE(lat.status().message().find("meets the 5 ms latency budget"), std::string::npos) << lat.status().message();
  EXPECT_NE(lat.status().message().find("lowest p99 is 10.00 ms, batch 1"), std::string::npos) << lat.status().message();
  auto mem = recommend(table(), {0, 10 * kMiB});
  ASSERT_FALSE(mem.ok());
  EXPECT_NE(mem.status().message().find("10.0 MiB memory budget (the smallest needs 100 MiB"), std::string::npos) << mem.status().message();
  std::vector<TuneRow> nofit = {row(1, {1, 2}, 0, 0, 1, false), row(1, {2, 1}, 0, 0, 1, false)};
  auto nf = recommend(nofit, {});
  ASSERT_FALSE(nf.ok());
  EXPECT_EQ(nf.status().message().rfind("no configuration fits: does not fit: test", 0), 0u) << nf.status().message();
  EXPECT_FALSE(recommend({}, {}).ok());
}

TEST(TuneRecommend, MemoryBudgetUsesTheMeasuredPeakWhenThereIsOne) {
  TuneRow r = row(4, {1, 2}, 100, 10, 300 * kMiB);
  r.estimate_bytes = 50 * kMiB;  // the process holds more than the plan's own buffers
  EXPECT_FALSE(meets_budgets(r, {0, 200 * kMiB}));
  r.peak_bytes = 0;  // not measured: the estimate stands in
  EXPECT_TRUE(meets_budgets(r, {0, 200 * kMiB}));
}

// A fake machine: throughput by batch per split, optional limits, and a log of the calls.
struct FakeMachine {
  std::map<int64_t, double> thr;           // by batch (both splits alike)
  int64_t fits_below_1x2 = 1 << 30;        // batches >= this do not fit
  int64_t fits_below_2x1 = 1 << 30;
  double ms_per_image = 1;
  std::vector<std::pair<int64_t, Split>> calls;
  MeasureFn fn() {
    return [this](int64_t b, const Split& s) -> Expected<TuneRow> {
      calls.push_back({b, s});
      const int64_t limit = s.instances == 1 ? fits_below_1x2 : fits_below_2x1;
      if (b >= limit) return row(b, s, 0, 0, 0, false);
      TuneRow r = row(b, s, thr.count(b) ? thr[b] : 10.0 * b, ms_per_image * b);
      r.p50_ms = ms_per_image * b;
      return r;
    };
  }
  std::vector<int64_t> batches_of(Split s) const {
    std::vector<int64_t> v;
    for (const auto& [b, sp] : calls)
      if (sp == s) v.push_back(b);
    return v;
  }
};

SweepOptions two_splits() {
  SweepOptions o;
  o.splits = {{1, 2}, {2, 1}};
  return o;
}

TEST(TuneSweep, StopsGrowingWhenThroughputIsFlatTwiceThenRefines) {
  FakeMachine m;
  m.thr = {{1, 100}, {2, 200}, {4, 300}, {8, 305}, {16, 306}, {32, 900}};
  auto rows = run_sweep(two_splits(), m.fn());
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  // 8 and 16 gain less than 3% over 300: stop before 32; then 12, between the best two (16, 8).
  EXPECT_EQ(m.batches_of({1, 2}), (std::vector<int64_t>{1, 2, 4, 8, 16, 12}));
  EXPECT_EQ(m.batches_of({2, 1}), (std::vector<int64_t>{1, 2, 4, 8, 16, 12}));
  ASSERT_EQ(rows->size(), 12u);
  for (std::size_t i = 1; i < rows->size(); ++i) EXPECT_LE((*rows)[i - 1].batch, (*rows)[i].batch);
  EXPECT_EQ((*rows)[8].batch, 12);
  EXPECT_NE((*rows)[8].note.find("refinement between 8 and 16"), std::string::npos) << (*rows)[8].note;
  EXPECT_NE(rows->back().note.find("stopped growing"), std::string::npos) << rows->back().note;
}

TEST(TuneSweep, KeepsGrowingWhileThroughputImproves) {
  FakeMachine m;  // 10 img/s per image of batch: always improving
  SweepOptions o = two_splits();
  o.max_batch = 16;
  auto rows = run_sweep(o, m.fn());
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(m.batches_of({1, 2}), (std::vector<int64_t>{1, 2, 4, 8, 16, 12}));
}

TEST(TuneSweep, BacksOffPerSplitWhenAConfigurationDoesNotFit) {
  FakeMachine m;
  m.fits_below_2x1 = 8;   // two instances run out of memory at batch 8
  m.fits_below_1x2 = 16;  // one instance at 16
  auto rows = run_sweep(two_splits(), m.fn());
  ASSERT_TRUE(rows.ok());
  // Nothing is tried above a batch that did not fit; 32 is never reached. The best two
  // within budgets are 8 (1x2) and 4: refinement at 6 for both splits.
  EXPECT_EQ(m.batches_of({2, 1}), (std::vector<int64_t>{1, 2, 4, 8, 6}));
  EXPECT_EQ(m.batches_of({1, 2}), (std::vector<int64_t>{1, 2, 4, 8, 16, 6}));
  int no_fit = 0;
  for (const TuneRow& r : *rows) no_fit += !r.fits;
  EXPECT_EQ(no_fit, 2);
  auto best = recommend(*rows, {});
  ASSERT_TRUE(best.ok());
  EXPECT_EQ((*rows)[*best].batch, 8);
}

TEST(TuneSweep, StopsASplitWhoseP50ExceedsTheLatencyBudget) {
  FakeMachine m;
  m.ms_per_image = 10;  // p50 = 10 ms x batch
  SweepOptions o = two_splits();
  o.budgets.latency_ms = 35;
  auto rows = run_sweep(o, m.fn());
  ASSERT_TRUE(rows.ok());
  // 4 has p50 40 ms: the last batch tried. The best two within the budget are 1 and 2, with
  // nothing between them to refine.
  EXPECT_EQ(m.batches_of({1, 2}), (std::vector<int64_t>{1, 2, 4}));
  bool noted = false;
  for (const TuneRow& r : *rows) noted |= r.batch == 4 && r.note.find("p50 over the latency budget") != std::string::npos;
  EXPECT_TRUE(noted);
  auto best = recommend(*rows, o.budgets);
  ASSERT_TRUE(best.ok());
  EXPECT_EQ((*rows)[*best].batch, 2);
}

TEST(TuneSweep, AnExplicitListIsMeasuredAsGiven) {
  FakeMachine m;
  m.thr = {{2, 100}, {16, 100}, {64, 100}};
  SweepOptions o = two_splits();
  o.batches = {64, 2, 16, 2};
  auto rows = run_sweep(o, m.fn());
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(m.batches_of({1, 2}), (std::vector<int64_t>{2, 16, 64}));  // no plateau stop, no refinement
  o.batches = {0, 4};
  EXPECT_FALSE(run_sweep(o, m.fn()).ok());
}

TEST(TuneSweep, AMeasurementErrorAbortsTheSweep) {
  int calls = 0;
  auto rows = run_sweep(two_splits(), [&](int64_t b, const Split&) -> Expected<TuneRow> {
    if (++calls == 3) return Err("kernel exploded at batch %lld", static_cast<long long>(b));
    return row(b, {1, 1}, 10, 1);
  });
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.status().message(), "kernel exploded at batch 2");
  EXPECT_EQ(calls, 3);
}

TEST(TuneSplits, EveryEvenShareOfTheThreads) {
  EXPECT_EQ(thread_splits(2), (std::vector<Split>{{1, 2}, {2, 1}}));
  EXPECT_EQ(thread_splits(6), (std::vector<Split>{{1, 6}, {2, 3}, {3, 2}, {6, 1}}));
  EXPECT_EQ(thread_splits(1), (std::vector<Split>{{1, 1}}));
  EXPECT_EQ(split_name({1, 2}), "1 instance x 2 threads");
  EXPECT_EQ(split_name({2, 1}), "2 instances x 1 thread");
}

TEST(TuneSizes, Formatting) {
  EXPECT_EQ(size_str(1000), "1000 bytes");
  EXPECT_EQ(size_str(1536), "1.5 KiB");
  EXPECT_EQ(size_str(12 * kMiB + kMiB / 2), "12.5 MiB");
  EXPECT_EQ(size_str(2048 * kMiB), "2048 MiB");
}

TEST(TuneParseBytes, UnitsAndErrors) {
  EXPECT_EQ(*parse_bytes("300000"), 300000);
  EXPECT_EQ(*parse_bytes("512M"), 512 * kMiB);
  EXPECT_EQ(*parse_bytes("512MiB"), 512 * kMiB);
  EXPECT_EQ(*parse_bytes("64kb"), 64 * 1024);
  EXPECT_EQ(*parse_bytes("1.5G"), 1536 * kMiB);
  EXPECT_EQ(*parse_bytes("2GB"), 2048 * kMiB);
  for (const char* bad : {"", "M", "abc", "-1G", "0", "5X", "5 MiBs", "nan"}) {
    auto r = parse_bytes(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.status().message().find("invalid size"), std::string::npos);
    }
  }
}

// Points of every <polyline data-panel=P data-split=S ... points="x,y ...">.
std::map<std::string, std::vector<std::pair<double, double>>> lines(const std::string& svg) {
  std::map<std::string, std::vector<std::pair<double, double>>> out;
  const std::regex line("<polyline data-panel=\"(\\w+)\" data-split=\"(\\w+)\"[^>]* points=\"([^\"]*)\"");
  const std::regex pt("([0-9.]+),([0-9.]+)");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), line); it != std::sregex_iterator(); ++it) {
    auto& v = out[(*it)[1].str() + "/" + (*it)[2].str()];
    const std::string pts = (*it)[3].str();
    for (auto p = std::sregex_iterator(pts.begin(), pts.end(), pt); p != std::sregex_iterator(); ++p)
      v.push_back({std::stod((*p)[1].str()), std::stod((*p)[2].str())});
  }
  return out;
}

TEST(TuneSvg, OneLinePerSplitInEachPanelWithPointsInBatchOrder) {
  std::vector<TuneRow> rows = {row(4, {1, 2}, 300, 40), row(1, {1, 2}, 100, 10), row(16, {1, 2}, 250, 120),
                               row(1, {2, 1}, 150, 12), row(4, {2, 1}, 320, 30), row(16, {2, 1}, 0, 0, 1, false),
                               row(64, {2, 1}, 0, 0, 1, false)};
  const std::string svg = tune_svg(rows, "tune <r50> & co", 4);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(svg.find("tune &lt;r50&gt; &amp; co"), std::string::npos);
  EXPECT_NE(svg.find("throughput (img/s)"), std::string::npos);
  EXPECT_NE(svg.find("p99 latency (ms)"), std::string::npos);
  EXPECT_NE(svg.find("1 instance x 2 threads"), std::string::npos);
  EXPECT_NE(svg.find("2 instances x 1 thread"), std::string::npos);
  EXPECT_EQ(svg.find(">64<"), std::string::npos);  // batches where nothing fits get no tick
  const auto l = lines(svg);
  ASSERT_EQ(l.size(), 4u);
  const auto& t12 = l.at("throughput/1x2");
  ASSERT_EQ(t12.size(), 3u);  // batches 1, 4, 16
  EXPECT_LT(t12[0].first, t12[1].first);
  EXPECT_LT(t12[1].first, t12[2].first);
  // log2 x: 1 -> 4 is as far as 4 -> 16.
  EXPECT_NEAR(t12[1].first - t12[0].first, t12[2].first - t12[1].first, 0.2);
  // SVG y grows downwards: 300 img/s is above 250, above 100.
  EXPECT_LT(t12[1].second, t12[2].second);
  EXPECT_LT(t12[2].second, t12[0].second);
  EXPECT_EQ(l.at("throughput/2x1").size(), 2u);
  const auto& p12 = l.at("p99/1x2");
  EXPECT_LT(p12[2].second, p12[0].second);  // 120 ms above 10 ms
  // The recommended point (batch 4, 2x1, 320 img/s) is ringed in both panels, and in the legend.
  std::size_t rings = 0;
  for (std::size_t p = svg.find("r=\"8\""); p != std::string::npos; p = svg.find("r=\"8\"", p + 1)) ++rings;
  EXPECT_EQ(rings, 3u);
}

TEST(TuneSvg, NothingFitsStillGivesADocument) {
  const std::string svg = tune_svg({row(1, {1, 1}, 0, 0, 1, false)}, "t");
  EXPECT_NE(svg.find("no configuration fits"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

}  // namespace
}  // namespace systolic::tools
