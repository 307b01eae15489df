// CTA tiling of one GEMM on a GPU: padding, waves over the SMs, split-K, shared-memory and L2
// operand streams, and the per-tile prologue and epilogue.
#include "sim/gpu_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace systolic::sim {
namespace {
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
}  // namespace

std::string GpuTiling::label() const {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%dx%d x%.1f waves", bm, bn, waves);
  std::string s = buf;
  if (split_k > 1) s += ", split-K " + std::to_string(split_k);
  return s;
}

GpuTiling gpu_tiling(const GemmShape& g, const target::Target& t, const target::PrecisionRate& rate, double out_bytes,
                     int bm, int bn, int split_k) {
  const target::GpuModel& gm = t.gpu;
  GpuTiling r;
  r.bm = bm;
  r.bn = bn;
  r.split_k = std::max(1, split_k);
  const double b = rate.bytes;
  const int kq = std::max(1, rate.mma_k);
  r.bk = std::max(kq, static_cast<int>(gm.k_stage_bytes / b));
  // K is padded to the MMA's K (a 3-channel stem's 147 taps become 160 at bf16), then each
  // slice to whole K steps: the tensor cores run the padding too.
  const int64_t kpad = ceil_div(g.k, kq) * kq;
  const int64_t k_slice = ceil_div(ceil_div(kpad, r.split_k), r.bk) * r.bk;
  r.padded_k = k_slice * r.split_k;
  const int64_t tiles_m = ceil_div(g.m, bm), tiles_n = ceil_div(g.n, bn);
  r.tiles = tiles_m * tiles_n * g.groups * r.split_k;
  // CTAs resident per SM: their pipelines in shared memory, their accumulators (4 bytes per
  // output, half again for operand fragments and addresses) in registers.
  const double smem_need = double(bm + bn) * r.bk * b * gm.stages;
  const double regs_need = double(bm) * bn * 4 * 1.5;
  r.ctas_per_sm = std::max(1, std::min({gm.max_ctas_per_sm, int(double(gm.smem_per_sm) / smem_need),
                                        int(double(gm.regs_per_sm) / regs_need)}));
  const int sms = std::max(1, t.cores);
  r.waves = double(r.tiles) / (double(sms) * r.ctas_per_sm);
  // The busiest SM runs ceil(tiles / SMs) tiles: the CTA scheduler spreads them one per SM
  // first, and co-resident CTAs share the SM's tensor cores.
  const double per_sm = double(ceil_div(r.tiles, sms));
  const double sm_macs_per_cycle = double(t.arrays_per_core) * t.rows * t.cols * rate.macs_per_pe_cycle;
  const double tile_macs = double(bm) * bn * k_slice;
  // Each warp reads its rows of A and its columns of B from shared memory every K step.
  const double warps_m = std::max(1.0, double(bm) / gm.warp_m), warps_n = std::max(1.0, double(bn) / gm.warp_n);
  const double smem_bytes = (double(bm) * warps_n + double(bn) * warps_m) * k_slice * b;
  const double tile_cycles = std::max(tile_macs / sm_macs_per_cycle, smem_bytes / gm.smem_bytes_per_cycle);
  r.mainloop_cycles = per_sm * tile_cycles;
  // Prologue (the first stages' loads) and epilogue (the tile's stores; fp32 partial sums
  // under split-K); another resident CTA's K loop runs meanwhile.
  const double store = double(bm) * bn * (r.split_k > 1 ? 4.0 : out_bytes) / gm.store_bytes_per_cycle;
  r.overhead_cycles = per_sm * (gm.tile_prologue_cycles + store) / r.ctas_per_sm;
  r.compute_cycles = r.mainloop_cycles + r.overhead_cycles;
  // L2 -> shared memory: every CTA streams its A rows and B columns over its K slice; split-K
  // partial sums are written and read back once by the reduction.
  r.l2_bytes = double(r.tiles) * (bm + bn) * k_slice * b;
  if (r.split_k > 1) r.l2_bytes += 2.0 * r.split_k * double(g.m) * g.n * g.groups * 4;
  r.mapping_eff = double(g.macs()) / (double(r.tiles) * tile_macs);
  return r;
}

GpuTiling gpu_tile_gemm(const GemmShape& g, const target::Target& t, const target::PrecisionRate& rate,
                        double out_bytes) {
  const double l2_per_cycle = t.on_chip.empty() ? t.offchip_gbs / t.clock_ghz : t.on_chip.front().bandwidth_gbs / t.clock_ghz;
  GpuTiling best;
  double best_cycles = -1;
  for (const auto& tile : t.gpu.cta_tiles)
    for (int s = 1; s <= std::max(1, t.gpu.split_k_max); s *= 2) {
      const GpuTiling c = gpu_tiling(g, t, rate, out_bytes, tile[0], tile[1], s);
      if (s > 1 && c.padded_k / s < 2 * c.bk) break;  // slices of fewer than two K steps
      const double cycles = std::max(c.compute_cycles, c.l2_bytes / l2_per_cycle);
      if (best_cycles < 0 || cycles < best_cycles * (1 - 1e-9)) {
        best = c;
        best_cycles = cycles;
      }
    }
  return best;
}

}  // namespace systolic::sim
