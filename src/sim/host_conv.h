// The CPU runtime's implicit-GEMM conv kernel (kernels/conv/conv_igemm.h) as a cost structure:
// its M blocking, tiles, panels, taps and thread-pool tasks, and what they imply beyond the FMAs:
// the per-tile-per-tap row setup (or row gather on the packed path), short tiles, waits for weights
// on their first touch in a task, and the busiest thread of the pool's schedule.
#pragma once
#include <cstdint>
#include <vector>

#include "kernels/conv/conv.h"
#include "kernels/conv/igemm_blocking.h"
#include "target/target.h"

namespace systolic::sim {

// How conv_igemm.h runs one conv: mirrors its path choice, M blocking and task split (same
// constants).
struct HostConvBlocking {
  bool direct = false;  // 1x1, stride 1, no pad: rows read in place, no per-tap setup
  bool merge = false;   // kw*icg <= 64 contiguous floats: one tap per kernel row
  bool pack = false;    // merged, K <= 512, several panels (or uint8): rows gathered once per tile
  int ntaps = 1;        // taps per tile (kh when merged, kh*kw otherwise)
  int64_t tap_len = 1;  // floats per tap (kw*icg when merged, icg otherwise)
  int64_t m = 0, k = 0;           // GEMM rows (pixels) and reduction per group
  int64_t panels = 0;             // NR-wide weight panels over all groups
  int64_t mc = 0, mblocks = 1;    // rows per M block, M blocks
  int64_t tiles = 0;              // MR-row tiles over all M blocks
  int64_t pb = 1;                 // panels per task (all of them on the packed path)
  int64_t kblocks = 1;            // K blocks per tile x panel (igemm::k_split)
  bool pixel_outer = false;       // a task's weights fit the L2 budget: tiles outer, panels inner
  // Row-pointer path with gaps between a tile's rows (kernel narrower than the x stride: the
  // 1x1 stride-2 downsamples): their streams do not run on into each other.
  bool strided_rows = false;
  // Full-tile equivalents of all tiles (sum of host_tile_share over every tile of every block).
  double tile_equiv = 0;
};
HostConvBlocking host_conv_blocking(const kernels::ConvParams& p, int mr, int nr, int threads,
                                    const kernels::igemm::Blocking& bl = kernels::igemm::kBlockingAvx2);

// Rows of tile `t` of the `nt` equal tiles a block of `len` rows is cut into (as the kernel cuts
// them: row offsets t * len / nt).
int64_t host_tile_rows(int64_t len, int64_t nt, int64_t t);
// A tile of `rows` rows against a full MR-row one: its FMAs are rows / MR of a full tile's; below
// 2 rows the loads (NR/W weight vectors and one broadcast per row each K step) bind instead.
double host_tile_share(int64_t rows, int mr);

// The calibration convs' channels per tap (sim/host_calibration.cc): the wide one's rate
// includes its own setup, the narrow one measures the extra cost of a short tap.
constexpr int kCalibNarrowTap = 24, kCalibWideTap = 128;
// The share of the narrow calibration's extra per-tap cost a tap of `tap_len` floats pays: 1 at
// kCalibNarrowTap and below, falling linearly to 0 at kCalibWideTap (whose rate already holds
// it): a longer tap's FMAs hide more of the next tap's row setup.
double host_setup_exposure(int64_t tap_len);

// Tap-setup events in core-cycles' units: row-pointer setups (tiles x panels x taps on the
// row-pointer path, 0 when direct; weighted by host_setup_exposure), the same for merged
// kernel-row taps (`merged`, unweighted: they pay t.host_conv.merged_setup_cycles when it is
// measured, else count as setups) and row gathers (tiles x taps on the packed path).
struct HostConvEvents {
  double setups = 0, merged = 0, gathers = 0;
};
HostConvEvents host_conv_events(const HostConvBlocking& b);

// The bandwidth (GB/s, all threads) a layer's packed weights are read again at within one conv:
// L2's when they fit one core's L2; else the measured re-read of the smallest probe at least as
// large (t.host_conv.reread_gbs; past the largest probe, DRAM's); unmeasured, L3's when they fit
// the L3, else DRAM's.
double host_reread_gbs(double weight_bytes, const target::Target& t);

// The busiest thread's finish time when pthreadpool runs tasks of these costs on `threads`
// threads: thread i starts with the i-th of `threads` contiguous, nearly equal ranges (the
// first `n % threads` one longer), takes its own tasks front to back, then steals single tasks
// from the back of the other threads' ranges (nearest lower thread first).
double pool_makespan(const std::vector<double>& costs, int threads);

// One conv on the measured host, in core-cycles at t.clock_ghz.
struct HostConvTime {
  double cycles = 0;        // elapsed: the busiest thread's tasks
  double busy = 0;          // all threads' cycles together
  double weight_wait = 0;   // of busy: waiting for weights on their first touch in a task
  double input_stream = 0;  // of cycles (not busy): input and residual reads the FMAs do not hide
  int64_t tasks = 0;
};
// The kernel's tasks (M block x panel group) with their cost on one thread: every tile x panel
// runs K steps of `step_cycles` (the calibrated cycles per K step of a full MR x NR tile) times
// host_tile_share(rows), plus a fixed cost per call (tile x panel; a K split's calls before the
// last cost partial_call_cycles), the tile's row setups (merged_setup_cycles per merged tap) or
// gathers, and with strided rows strided_step_cycles more per K step. A task reads each of its
// panels' weights (K x NR floats) from where they are: DRAM when `weights_from_dram` (the plan's
// weights outgrow the L3) or L3 on their first pass in this conv, else (a later pass over the
// same panels) host_reread_gbs; the threads share that level's bandwidth. Streamed through L1
// (K-split and panel-outer paths) the first pass's whole transfer adds to the FMAs, and a later
// pass's overlaps the panel's FMAs; kept in L2 (pixel-outer, packed) it overlaps the first tile's
// FMAs (whichever is longer counts). The tasks then go through pool_makespan. The activations
// it reads (the input's rows and columns the kernel touches, and the `residual`, NHWC like the
// output, when it adds one) stream behind that up to the largest re-read probe each
// (host_reread_gbs of that size, all threads; whichever is longer counts), and past it come from
// DRAM (at t.host_conv.act_dram_gbs when measured) and add. Zero unless t.host_conv.enabled.
HostConvTime host_conv_time(const kernels::ConvParams& p, const target::Target& t, double step_cycles,
                            bool weights_from_dram, bool residual = false);

// The measured host's conv model for a plan's igemm kernel other than the one the calibration
// timed (t.host_conv's tile): `kernel`'s register tile, with *step_cycles and the per-call costs
// scaled by its area against the calibrated tile's (the calibrated efficiency and other costs
// taken for it). Unchanged when the tile is the calibrated one or the name carries none.
// (MobileNetV2's short 1x1s run on the 8x32 kernel: on the calibrated 6x64 tile the model spread
// 16 or 24 output channels over 64-wide panels and came out 40-100% over; with the 6x64 tile's
// call cost per 8x32 call, its K = 16 to 32 layers were still 28-59% over, now 6-28%.)
target::Target host_conv_for_kernel(const target::Target& t, const std::string& kernel, double* step_cycles);

}  // namespace systolic::sim
