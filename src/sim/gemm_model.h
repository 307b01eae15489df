// Mapping one GEMM (per group: M x K times K x N) onto R x C systolic arrays: folds, cycles
// with fill and drain for the dataflow, mapping efficiency and on-chip operand traffic.
#pragma once
#include <cstdint>

#include "target/target.h"

namespace systolic::sim {

// Whose cycle formulas: our TPU-like model (weights double-buffered, folds pipelined back to
// back) or SCALE-Sim v2's (every fold pays its own fill and drain).
enum class Convention : uint8_t { native, scalesim };

struct GemmShape {
  int64_t m = 1, k = 1, n = 1;  // per group: rows of A (output pixels), reduction, output channels
  int64_t groups = 1;
  int64_t macs() const { return m * k * n * groups; }
};

struct GemmMapping {
  // SCALE-Sim's names: the stationary operand is Sr x Sc on the array, T rows stream through.
  // ws: Sr=K, Sc=N, T=M;  os: Sr=M, Sc=N, T=K;  is: Sr=K, Sc=M, T=N.
  int64_t sr = 0, sc = 0, t = 0;
  int64_t row_folds = 0, col_folds = 0;
  int64_t folds = 0;          // row_folds * col_folds * groups (all arrays together)
  int64_t split = 1;          // T split across arrays when there are fewer folds than arrays
  int64_t folds_per_array = 0;
  int64_t cycles = 0;         // compute cycles on the busiest array, incl. fill and drain
  double mapping_eff = 0;     // used PEs / (folds * R * C): padding waste is 1 - this
  double compute_util = 0;    // MACs / (arrays * R * C * cycles)
  // On-chip operand traffic in elements: stationary loads, streamed reads, output writes.
  double stationary_elems = 0, streamed_elems = 0, output_elems = 0;
};

// Cycles of `folds` folds of T streamed rows each on one R x C array.
int64_t fold_cycles(target::Dataflow df, Convention conv, int rows, int cols, int64_t folds, int64_t t);

GemmMapping map_gemm(const GemmShape& g, int rows, int cols, int arrays, target::Dataflow df, Convention conv);

}  // namespace systolic::sim
