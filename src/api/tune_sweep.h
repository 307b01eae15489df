// The `systolic tune` sweep over batch sizes and thread splits, and the rule that picks the
// recommended configuration. Both are independent of how a point is measured.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "api/tune_measure.h"
#include "base/status.h"

namespace systolic::api {

struct Budgets {
  double latency_ms = 0;     // p99 per run; 0: none
  int64_t memory_bytes = 0;  // process RSS; 0: none
};

// Every way to share `total_threads` out evenly: instances x threads with instances dividing
// the total, one instance first (2 threads: 1 x 2, 2 x 1).
std::vector<Split> thread_splits(int total_threads);

struct SweepOptions {
  // Measured as given (sorted) when set; otherwise powers of two up to max_batch, stopping
  // when throughput no longer improves, plus one refinement point between the two best.
  std::vector<int64_t> batches;
  int64_t max_batch = 32;
  std::vector<Split> splits;
  Budgets budgets;
};

// Measures one point; an error aborts the sweep (a configuration that does not fit is a row
// with fits == false, not an error).
using MeasureFn = std::function<Expected<TuneRow>(int64_t batch, const Split& split)>;

// Runs the sweep. A split stops growing its batch after a point that does not fit or whose
// p50 exceeds the latency budget; the powers-of-two sweep stops when the best throughput of
// a batch size fails to beat the best so far by more than 3% twice in a row. Rows come back
// sorted by batch, then split order, with those decisions in their notes.
Expected<std::vector<TuneRow>> run_sweep(const SweepOptions& opts, const MeasureFn& measure);

// Whether a measured row meets the budgets (why not, in *why, when given).
bool meets_budgets(const TuneRow& row, const Budgets& b, std::string* why = nullptr);

// The index of the recommended row: the highest throughput among rows that fit and meet the
// budgets (lower p99, then smaller batch, on ties). An error saying why when none does.
Expected<std::size_t> recommend(const std::vector<TuneRow>& rows, const Budgets& b);

}  // namespace systolic::api
