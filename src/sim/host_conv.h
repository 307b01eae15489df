// The CPU runtime's implicit-GEMM conv kernel (kernels/conv/conv_igemm.h) as a cost structure:
// its M blocking, tiles, panels and taps, and the overheads they imply beyond the FMAs: the
// per-tile-per-tap row setup (or row gather on the packed path) and the weight re-reads per M block.
#pragma once
#include <cstdint>

#include "kernels/conv/conv.h"
#include "target/target.h"

namespace systolic::sim {

// How conv_igemm.h runs one conv: mirrors its path choice and its M blocking (same constants).
struct HostConvBlocking {
  bool direct = false;  // 1x1, stride 1, no pad: rows read in place, no per-tap setup
  bool merge = false;   // kw*icg <= 64 contiguous floats: one tap per kernel row
  bool pack = false;    // merged with K <= 512: rows gathered once per tile, shared by all panels
  int ntaps = 1;        // taps per tile (kh when merged, kh*kw otherwise)
  int64_t tap_len = 1;  // floats per tap (kw*icg when merged, icg otherwise)
  int64_t m = 0, k = 0;           // GEMM rows (pixels) and reduction per group
  int64_t panels = 0;             // NR-wide weight panels over all groups
  int64_t mc = 0, mblocks = 1;    // rows per M block, M blocks
  int64_t tiles = 0;              // MR-row tiles over all M blocks
};
HostConvBlocking host_conv_blocking(const kernels::ConvParams& p, int mr, int nr, int threads);

// The calibration convs' channels per tap (tools/host_calibration.cc): the wide one's rate
// includes its own setup, the narrow one measures the extra cost of a short tap.
constexpr int kCalibNarrowTap = 24, kCalibWideTap = 128;
// The share of the narrow calibration's extra per-tap cost a tap of `tap_len` floats pays: 1 at
// kCalibNarrowTap and below, falling linearly to 0 at kCalibWideTap (whose rate already holds
// it): a longer tap's FMAs hide more of the next tap's row setup.
double host_setup_exposure(int64_t tap_len);

// Tap-setup events in core-cycles' units: row-pointer setups (tiles x panels x taps on the
// row-pointer path, 0 when direct; weighted by host_setup_exposure) and row gathers (tiles x
// taps on the packed path).
struct HostConvEvents {
  double setups = 0, gathers = 0;
};
HostConvEvents host_conv_events(const HostConvBlocking& b);

// Weight bytes re-read beyond the first pass: (M blocks - 1) x the layer's packed weights
// (every M block sweeps all panels); 0 on the packed path (its weights stay in L2).
double host_conv_reread_bytes(const HostConvBlocking& b, int nr);

// The level the re-reads come from and its bandwidth (GB/s): L2 when the packed weights fit one
// core's L2, else L3 when they fit it, else DRAM.
double host_reread_gbs(double weight_bytes, const target::Target& t);

// Cycles (at t.clock_ghz, elapsed, all cores together) the kernel spends beyond its FMAs on
// this conv: setup events x measured cycles / cores, plus the weight re-reads. The thread pool
// hands each thread a contiguous run of (M block, panels) tasks, so min(M blocks, cores) passes
// over the weights run at the same time: the re-reads among them come from where the first pass
// does (DRAM when `weights_from_dram`, i.e. the plan's weights outgrow the L3, at the measured
// DRAM bandwidth), the later ones from host_reread_gbs. The microkernel loads its weights in the
// FMA loop with no software prefetch, so re-reads are charged in series with the FMAs. (The
// first pass stays in the overlapped off-chip traffic of cost_matrix.)
// 0 unless t.host_conv.enabled.
double host_conv_extra_cycles(const kernels::ConvParams& p, const target::Target& t, bool weights_from_dram);

}  // namespace systolic::sim
