// GEMM-on-systolic-array mapping: folds, fill/drain cycles per dataflow, utilization.
#include "sim/gemm_model.h"

#include <algorithm>

namespace systolic::sim {
namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

int64_t fold_cycles(target::Dataflow df, Convention conv, int rows, int cols, int64_t folds, int64_t t) {
  if (folds <= 0) return 0;
  const int64_t r = rows, c = cols;
  const bool os = df == target::Dataflow::output_stationary;
  if (conv == Convention::scalesim) {
    // SCALE-Sim v2: ws/is load the stationary tile (R cycles), stream T rows skewed over R rows
    // and C columns, and drain before the next fold: 2R + C + T - 2. os has no preload: R + C + T - 2.
    return folds * ((os ? r : 2 * r) + c + t - 2);
  }
  // Native: the next stationary tile loads while the current one streams (double-buffered
  // weights, as in the TPU), so a fold costs max(T, R); the pipeline fills and drains once.
  const int64_t preload = os ? 0 : r;
  return preload + folds * std::max(t, r) + r + c - 2;
}

GemmMapping map_gemm(const GemmShape& g, int rows, int cols, int arrays, target::Dataflow df, Convention conv) {
  GemmMapping m;
  switch (df) {
    case target::Dataflow::weight_stationary: m.sr = g.k; m.sc = g.n; m.t = g.m; break;
    case target::Dataflow::output_stationary: m.sr = g.m; m.sc = g.n; m.t = g.k; break;
    case target::Dataflow::input_stationary: m.sr = g.k; m.sc = g.m; m.t = g.n; break;
  }
  m.row_folds = ceil_div(m.sr, rows);
  m.col_folds = ceil_div(m.sc, cols);
  m.folds = m.row_folds * m.col_folds * g.groups;
  arrays = std::max(1, arrays);
  // Spread folds over the arrays; when there are fewer folds than arrays, also split the
  // streamed dimension T. Pick the split with the fewest cycles on the busiest array.
  m.cycles = -1;
  for (int64_t s = 1; s <= arrays && s <= m.t; ++s) {
    const int64_t per_array = ceil_div(m.folds * s, arrays);
    const int64_t cyc = fold_cycles(df, conv, rows, cols, per_array, ceil_div(m.t, s));
    if (m.cycles < 0 || cyc < m.cycles) {
      m.cycles = cyc;
      m.split = s;
      m.folds_per_array = per_array;
    }
  }
  const double pes = static_cast<double>(rows) * cols;
  m.mapping_eff = static_cast<double>(m.sr) * m.sc * g.groups / (m.folds * pes);
  m.compute_util = m.cycles > 0 ? static_cast<double>(g.macs()) / (arrays * pes * m.cycles) : 0;
  // Traffic: the stationary Sr x Sc operand is loaded once; the streamed T x Sr operand is
  // read once per column fold; outputs T x Sc are written once per row fold (partial sums),
  // except in os where they stay in the array until done.
  const double gr = static_cast<double>(g.groups);
  m.stationary_elems = gr * m.sr * m.sc;
  if (df == target::Dataflow::output_stationary) {
    m.streamed_elems = gr * (static_cast<double>(m.col_folds) * m.sr * m.t + static_cast<double>(m.row_folds) * m.t * m.sc);
    m.output_elems = gr * m.sr * m.sc;
    m.stationary_elems = 0;  // the outputs are what stays; nothing is preloaded
  } else {
    m.streamed_elems = gr * m.col_folds * static_cast<double>(m.t) * m.sr;
    m.output_elems = gr * m.row_folds * static_cast<double>(m.t) * m.sc;
  }
  return m;
}

}  // namespace systolic::sim
