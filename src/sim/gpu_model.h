// One conv or GEMM on a GPU's tensor cores, as an implicit-GEMM kernel runs it: the M x N output
// cut into thread-block (CTA) tiles, K padded to the MMA instruction's K, tiles scheduled in
// waves over the SMs (the last wave part-empty: wave quantization), small GEMMs split along K,
// and the operand tiles each CTA streams from L2 into shared memory.
#pragma once
#include <cstdint>
#include <string>

#include "sim/gemm_model.h"
#include "target/target.h"

namespace systolic::sim {

struct GpuTiling {
  int bm = 0, bn = 0, bk = 0;  // the CTA tile and its K step
  int split_k = 1;             // K slices (each a CTA of its own, partial sums reduced after)
  int ctas_per_sm = 1;         // resident at once (shared memory and registers allow)
  int64_t tiles = 0;           // CTAs launched: M tiles x N tiles x groups x K slices
  double waves = 0;            // tiles / (SMs x ctas_per_sm)
  int64_t padded_k = 0;        // K rounded up to the MMA K (and to bk per slice)
  double mainloop_cycles = 0;  // the busiest SM's tensor-core cycles over its tiles
  double overhead_cycles = 0;  // the busiest SM's prologues and epilogues not hidden by other CTAs
  double compute_cycles = 0;   // mainloop + overhead
  double l2_bytes = 0;         // operand tiles streamed L2 -> shared memory, plus split-K partials
  double mapping_eff = 0;      // useful MACs / MACs of the launched (padded) tiles
  std::string label() const;   // "128x256 x2.3 waves" (", split-K 4")
};

// The fastest tiling of `g` at `rate` on `t` (t.gpu.enabled) by max(compute, L2 streaming),
// as an autotuning kernel library keeps the fastest tactic. `out_bytes`: bytes per output
// element the epilogue stores.
GpuTiling gpu_tile_gemm(const GemmShape& g, const target::Target& t, const target::PrecisionRate& rate,
                        double out_bytes);
// One given tile (bm x bn) with `split_k` K slices; the search above tries each.
GpuTiling gpu_tiling(const GemmShape& g, const target::Target& t, const target::PrecisionRate& rate, double out_bytes,
                     int bm, int bn, int split_k);

}  // namespace systolic::sim
