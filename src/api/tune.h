// `systolic tune`'s sweep as a library call: batch sizes and thread/instance splits measured
// on this host, the recommendation under the budgets, saved for bench and classify. The CLI
// prints it (and charts it); Python returns tune_json's object.
#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/tune_measure.h"
#include "api/tune_store.h"
#include "api/tune_sweep.h"
#include "base/status.h"
#include "plan/program.h"

namespace systolic::api {

struct TuneRequest {
  std::string model;      // .onnx (compiled per batch) or .plan (fixed batch)
  std::string precision;  // requested ("": the model's own)
  Budgets budgets;
  std::string batches;         // "1,4,16"; "": the default sweep
  bool batches_given = false;  // batches or max_batch chosen by the user
  int64_t max_batch = 32;
  int threads = 0;  // shared out among instances; 0: one per core
  double seconds = 2;
  // The model compiled for `batch` (0: a plan's own batch), as the caller opens models.
  std::function<Expected<std::shared_ptr<const plan::Program>>(int64_t batch)> load;
  // Each measured point as it completes (progress).
  std::function<void(int64_t batch, const Split& split, const TuneRow& row)> measured;
};

struct TuneReport {
  std::string model;
  std::string precision;  // the plan's
  int threads = 0;
  double seconds = 0;
  Budgets budgets;
  std::vector<TuneRow> rows;
  int best = -1;  // index into rows, or -1 with `error` set
  std::string error;
  TunedConfig cfg;         // rows[best] as saved
  std::string svg, saved;  // paths, "" when not written
  const char* peak_source = "";
};

// An error for bad arguments or a failed sweep; no configuration within the budgets is a
// report with best -1 and `error`.
Expected<TuneReport> tune(const TuneRequest& r);

// Saves the recommendation (if any) for bench and classify under the plan's precision and
// sets t->saved.
Status save_recommendation(TuneReport* t);

// The object `systolic tune --json` prints.
nlohmann::json tune_json(const TuneReport& t);

}  // namespace systolic::api
