// Sweep control (which batch sizes and splits get measured, and when to stop) and the
// recommendation rule.
#include "api/tune_sweep.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace systolic::api {
namespace {

constexpr double kMinGain = 1.03;  // a bigger batch must beat the best so far by more than 3%

void add_note(TuneRow& r, const std::string& s) { r.note += (r.note.empty() ? "" : "; ") + s; }

}  // namespace

std::vector<Split> thread_splits(int total_threads) {
  std::vector<Split> out;
  for (int i = 1; i <= std::max(1, total_threads); ++i)
    if (total_threads % i == 0) out.push_back({i, total_threads / i});
  if (out.empty()) out.push_back({1, 1});
  return out;
}

Expected<std::vector<TuneRow>> run_sweep(const SweepOptions& o, const MeasureFn& measure) {
  if (o.splits.empty()) return Err("no thread splits to measure");
  const bool listed = !o.batches.empty();
  std::vector<int64_t> batches = o.batches;
  if (listed) {
    std::sort(batches.begin(), batches.end());
    batches.erase(std::unique(batches.begin(), batches.end()), batches.end());
    if (batches.front() < 1) return Err("batch sizes must be positive");
  } else {
    if (o.max_batch < 1) return Err("the largest batch must be positive");
    for (int64_t b = 1; b <= o.max_batch; b *= 2) batches.push_back(b);
  }
  std::vector<TuneRow> rows;
  // The batch at which a split stopped growing (0: it has not): larger ones are skipped.
  std::vector<int64_t> stopped_at(o.splits.size(), 0);
  auto all_stopped = [&] {
    return std::all_of(stopped_at.begin(), stopped_at.end(), [](int64_t s) { return s != 0; });
  };
  // Measures every split still growing at `b`; returns the best throughput among them.
  auto measure_batch = [&](int64_t b, const std::string& why) -> Expected<double> {
    double best = 0;
    for (std::size_t i = 0; i < o.splits.size(); ++i) {
      if (stopped_at[i] != 0 && stopped_at[i] <= b) continue;
      auto r = measure(b, o.splits[i]);
      if (!r.ok()) return r.status();
      TuneRow row = *r;
      row.batch = b;
      row.split = o.splits[i];
      if (!row.fits) {
        if (row.note.empty()) row.note = "does not fit";
        stopped_at[i] = b;
      } else if (o.budgets.latency_ms > 0 && row.p50_ms > o.budgets.latency_ms) {
        add_note(row, "p50 over the latency budget: larger batches skipped");
        stopped_at[i] = b;
      }
      if (!why.empty()) add_note(row, why);
      if (row.fits) best = std::max(best, row.throughput_per_s);
      rows.push_back(std::move(row));
    }
    return best;
  };
  double best = 0;
  int flat = 0;
  for (std::size_t k = 0; k < batches.size() && !all_stopped(); ++k) {
    const std::size_t first = rows.size();
    auto b = measure_batch(batches[k], "");
    if (!b.ok()) return b.status();
    if (listed) continue;
    flat = *b > best * kMinGain ? 0 : flat + 1;
    best = std::max(best, *b);
    if (flat >= 2 && k + 1 < batches.size()) {
      for (std::size_t r = first; r < rows.size(); ++r)
        add_note(rows[r], "throughput flat for two batch sizes: stopped growing");
      break;
    }
  }
  if (!listed) {
    // One more point between the two best batch sizes (among rows within the budgets).
    std::map<int64_t, double> by_batch;
    for (const TuneRow& r : rows)
      if (meets_budgets(r, o.budgets)) by_batch[r.batch] = std::max(by_batch[r.batch], r.throughput_per_s);
    std::vector<std::pair<double, int64_t>> ranked;
    for (const auto& [b, t] : by_batch) ranked.push_back({t, b});
    std::sort(ranked.rbegin(), ranked.rend());
    if (ranked.size() >= 2) {
      const int64_t lo = std::min(ranked[0].second, ranked[1].second), hi = std::max(ranked[0].second, ranked[1].second);
      const int64_t mid = (lo + hi) / 2;
      const bool seen = std::any_of(rows.begin(), rows.end(), [&](const TuneRow& r) { return r.batch == mid; });
      if (hi - lo >= 2 && !seen) {
        auto b = measure_batch(mid, "refinement between " + std::to_string(lo) + " and " + std::to_string(hi));
        if (!b.ok()) return b.status();
      }
    }
  }
  std::stable_sort(rows.begin(), rows.end(), [](const TuneRow& a, const TuneRow& b) { return a.batch < b.batch; });
  return rows;
}

bool meets_budgets(const TuneRow& row, const Budgets& b, std::string* why) {
  std::string w;
  char buf[160];
  if (!row.fits) {
    w = row.note.empty() ? "does not fit" : row.note;
  } else if (b.latency_ms > 0 && row.p99_ms > b.latency_ms) {
    std::snprintf(buf, sizeof buf, "p99 %.2f ms over the %g ms latency budget", row.p99_ms, b.latency_ms);
    w = buf;
  } else if (b.memory_bytes > 0 && row.memory_bytes() > b.memory_bytes) {
    w = size_str(row.memory_bytes()) + " over the " + size_str(b.memory_bytes) + " memory budget";
  }
  if (why) *why = w;
  return w.empty();
}

Expected<std::size_t> recommend(const std::vector<TuneRow>& rows, const Budgets& b) {
  std::size_t best = rows.size();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!meets_budgets(rows[i], b)) continue;
    if (best == rows.size()) {
      best = i;
      continue;
    }
    const TuneRow &r = rows[i], &c = rows[best];
    if (r.throughput_per_s != c.throughput_per_s ? r.throughput_per_s > c.throughput_per_s
        : r.p99_ms != c.p99_ms                   ? r.p99_ms < c.p99_ms
                                                 : r.batch < c.batch)
      best = i;
  }
  if (best < rows.size()) return best;
  if (rows.empty()) return Err("no configuration was measured");
  // Say which budget nothing met, with the closest any configuration came.
  const TuneRow* fastest = nullptr;
  const TuneRow* smallest = nullptr;
  for (const TuneRow& r : rows) {
    if (!r.fits) continue;
    if (!fastest || r.p99_ms < fastest->p99_ms) fastest = &r;
    if (!smallest || r.memory_bytes() < smallest->memory_bytes()) smallest = &r;
  }
  if (!fastest) return Err("no configuration fits: %s", rows.front().note.empty() ? "does not fit" : rows.front().note.c_str());
  char buf[400];
  if (b.latency_ms > 0 && fastest->p99_ms > b.latency_ms)
    std::snprintf(buf, sizeof buf, "no configuration meets the %g ms latency budget (the lowest p99 is %.2f ms, batch %lld, %s)",
                  b.latency_ms, fastest->p99_ms, static_cast<long long>(fastest->batch), split_name(fastest->split).c_str());
  else if (b.memory_bytes > 0 && smallest->memory_bytes() > b.memory_bytes)
    std::snprintf(buf, sizeof buf, "no configuration meets the %s memory budget (the smallest needs %s, batch %lld, %s)",
                  size_str(b.memory_bytes).c_str(), size_str(smallest->memory_bytes()).c_str(),
                  static_cast<long long>(smallest->batch), split_name(smallest->split).c_str());
  else
    std::snprintf(buf, sizeof buf, "no configuration meets the latency and memory budgets together");
  return Err("%s", buf);
}

}  // namespace systolic::api
