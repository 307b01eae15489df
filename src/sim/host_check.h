// `simulate --target host --check`: the host preset from measurements, and the simulated plan
// compared step by step with the same plan's per-step times in the CPU runtime.
#pragma once
#include <cstddef>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kernels/conv/conv.h"
#include "plan/program.h"
#include "sim/simulate.h"
#include "target/target.h"

namespace systolic::sim {

// Median microseconds of one thread-pool dispatch of a trivial loop over `threads` items
// (what every conv/pool/element-wise step pays before it computes; ~0 with one thread).
double measured_dispatch_us(int threads);
// The same on an existing pool: the median of up to `reps` dispatches within `budget_s` seconds.
double measured_dispatch_us(pthreadpool_t pool, int threads, int reps, double budget_s);
// GFLOP/s of conv kernel `kernel` on the calibration conv (3x3, 128 -> 128 channels, 32x32,
// batch 1, pad 1), less `dispatch_us` per call, divided by `peak_gflops`; 0 when the kernel
// does not run that shape.
double measured_conv_efficiency(const std::string& kernel, int threads, double peak_gflops, double dispatch_us);
// The conv kernels' structure costs (sim/host_conv.h), from fourteen calibration convs timed on
// m.threads threads in kCalibRounds rounds (sim/host_check_calibrator.h), each solved for with
// the simulator's own model of that conv (tile shares, tasks, busiest thread) on a host with m's
// peak, tile and bandwidths: wide (3x3, 128 -> 128, 32x32) gives the cycles per full-tile K step
// (-> efficiency = MR*NR/FMA width / that) and, together with a short-K 1x1 (64 -> 256, 32x32),
// the fixed cost of a microkernel call; narrow (3x3, 24 -> 128, 32x32), with that, the setup
// per tile x panel x tap; the stem shape (3 -> 128, 7x7 stride 2, 128x128) on the packed path the
// cycles per tile x kernel-row gather; the same stem on one panel (3 -> NR) the setup per merged
// kernel-row tap (21 floats, row pointers); the strided 1x1 (192 -> 384, stride 2, 56x56) the
// extra cycles per K step of rows with gaps between them, against its stride-1 twin (192 -> 384,
// 28x28: the same GEMM); the wide shape again on the ISA's first Winograd kernel that takes it,
// with the rate and call cost found before, the cycles per transformed float (and on the F(2x2)
// kernel when that is another, its own); a deep-K 1x1 (768 -> 192, 16x16: six K blocks of partial
// sums on the K-split path), with all of those, the cost of a call that stores partial sums;
// three depthwise 3x3s on the ISA's depthwise kernel, with long rows (128 channels, 56x56), short
// ones (512 channels, 7x7) and stride 2 (128 channels, 56x56), the bytes it reads and writes per
// second and its cost per output row of 16 channels (sim/host_dw.h); a 1x1 over a 50 MB input
// (calib_far), with everything before, the rate of activations past the caches. Every conv is
// timed with its input just read by the pool's threads (a model's layer reads what the layer
// before it just wrote), the depthwise ones with their output too (its writes are half their
// bytes).
// `dispatch_us` is taken off every timed call.
constexpr int kCalibRounds = 15;
struct ConvCalibration {
  bool ok = false;
  double efficiency = 0, setup_cycles = 0, gather_cycles = 0, strided_step_cycles = 0, call_cycles = 0;
  double merged_setup_cycles = -1;  // < 0: not measured (merged taps pay setup_cycles)
  double partial_call_cycles = -1;  // < 0: not measured
  double wino_float_cycles = -1;  // < 0: no Winograd kernel takes the wide shape here
  double wino2_float_cycles = -1;  // the F(2x2) kernel's (< 0: not measured; then wino_float_cycles)
  double peak_gflops = 0;  // the highest FMA peak seen in the rounds (what the cycles count in)
  double dram_read_gbs = 0;  // median DRAM read bandwidth over the rounds (0: not sampled)
  std::array<double, 4> reread_gbs{};  // median re-read per target::kRereadProbes size (0: not sampled)
  double dispatch_us = -1;  // median pool dispatch over the rounds (< 0: not sampled)
  // The depthwise kernel's read and write rates (0: not measured) and its cost per output row of
  // 16 channels, core-cycles (sim/host_dw.h), from calib_dw, calib_dw_rows and calib_dw_strided.
  double dw_read_gbs = 0, dw_write_gbs = 0, dw_row_cycles = 0;
  // What activations past the caches stream in at, all threads, from calib_far (0: not measured).
  double act_dram_gbs = 0;
  double reorder_elem_ns = 0;  // the runtime's Reorder per element (kCalibReorderDims; 0: not measured)
};
ConvCalibration calibrate_conv_kernel(const std::string& kernel, const target::HostMeasurements& m, double dispatch_us);
// The calibration convs: wide and narrow on the row-pointer path (kCalibWideTap and
// kCalibNarrowTap channels per tap, 3x3 pad 1, 32x32 -> 128 channels), the stem-like packed
// one (3 -> 128, 7x7 stride 2 pad 3, 128x128) and a strided 1x1 (192 -> 384, stride 2,
// 56x56) with its stride-1 twin (28x28), a short-K 1x1 (64 -> 256, 32x32), a deep-K 1x1
// (768 -> 192, 16x16), three depthwise 3x3s (calib_dw, calib_dw_rows, calib_dw_strided) and a
// 1x1 over an input past the caches (calib_far). Synthetic shapes, not any model's layers.
kernels::ConvParams calib_wide();
kernels::ConvParams calib_narrow();
kernels::ConvParams calib_stem();
// The stem shape on one panel of an `nr`-wide tile (3 -> nr, 7x7 stride 2 pad 3, 128x128): its
// kernel rows of 21 floats merge and, with one panel, take row pointers instead of a gather.
kernels::ConvParams calib_merged(int nr);
kernels::ConvParams calib_strided();
kernels::ConvParams calib_short();
kernels::ConvParams calib_strided_twin();
kernels::ConvParams calib_deep();
// A 1x1 192 -> 64 over 16 images of 64x64: its 50 MB input (as large as ResNet-50's layer1
// outputs at batch 16, three times the largest re-read probe), read just before it runs as a
// layer's input was just written; its time beyond its FMAs gives act_dram_gbs.
kernels::ConvParams calib_far();
// The Reorder the calibration times: NCHW -> NHWC of two 3-channel 160x160 images, the runtime's
// layout change for an image input (dims as kernels::reorder_f32 takes them, to NHWC).
constexpr int64_t kCalibReorderDims[4] = {2, 3, 160, 160};
constexpr std::size_t kCalibReorderElems = std::size_t{2} * 3 * 160 * 160;  // their product
static_assert(kCalibReorderElems == std::size_t(kCalibReorderDims[0] * kCalibReorderDims[1] * kCalibReorderDims[2] * kCalibReorderDims[3]));
// Depthwise 3x3, 128 channels, 56x56, stride 1, pad 1: the plan's depthwise kernel streams its
// input and output (1.6 MB each) past its FMAs.
kernels::ConvParams calib_dw();
// Depthwise 3x3, 512 channels, 7x7, stride 1, pad 1: rows of 7 pixels, two of them borders, and
// a tenth of calib_dw's bytes over half its row segments.
kernels::ConvParams calib_dw_rows();
// Depthwise 3x3, 128 channels, 56x56, stride 2, pad 1: four bytes read for each one written (the
// other two write as many as they read).
kernels::ConvParams calib_dw_strided();
// The first depthwise kernel of conv.inc for the instruction set of `conv_kernel` that takes
// calib_dw() on this CPU ("" when none).
std::string calib_dw_kernel(const std::string& conv_kernel);
// The first Winograd kernel of conv.inc that takes calib_wide() on this CPU, for the instruction
// set of `conv_kernel` (its name's last part, e.g. "avx2"): a plan's direct and Winograd convs
// run on the same ISA ("" when none).
std::string calib_winograd_kernel(const std::string& conv_kernel);
// The F(2x2) Winograd kernel of the same instruction set that takes calib_wide(), when it is not
// calib_winograd_kernel ("" otherwise).
std::string calib_winograd2_kernel(const std::string& conv_kernel);
// Seconds per call of each calibration conv (<= 0: not measured).
struct CalibrationTimes {
  double wide = -1, narrow = -1, stem = -1, strided = -1, short_k = -1, strided_twin = -1;
  double winograd = -1;  // the wide shape on winograd_kernel
  std::string winograd_kernel{};
  double deep = -1;
  double dw = -1;       // calib_dw() on calib_dw_kernel
  double dw_rows = -1;  // calib_dw_rows() on calib_dw_kernel
  double dw_strided = -1;  // calib_dw_strided() on calib_dw_kernel
  double merged = -1;      // calib_merged(tile columns)
  double far = -1;         // calib_far()
  double winograd2 = -1;   // the wide shape on winograd2_kernel
  std::string winograd2_kernel{};
};
// calibrate_conv_kernel's arithmetic on given timings.
ConvCalibration solve_conv_calibration(const target::HostMeasurements& m, double dispatch_us, const CalibrationTimes& s);

// Best GB/s of summing a `bytes_per_thread` buffer per thread on `threads` threads (L2- or
// L3-resident by its size).
double measured_read_gbs(int threads, std::size_t bytes_per_thread);
// The plan's dominant direct (igemm) conv kernel, by FLOPs, a Winograd conv's counting for the
// first igemm kernel of its instruction set (calib_igemm_kernel), and its register tile parsed
// from the name ("conv_f32_igemm_6x16_avx2" -> 6 x 16); "" and 0 x 0 when the plan has none.
// (A plan whose 3x3 convs all run on Winograd, such as ResNet-18's layer1-3 on AVX-512, was
// calibrated on nothing before, and every conv fell back to the generic array model: +30%.)
std::string dominant_conv_kernel(const plan::Program& p, int* rows, int* cols);
// The first igemm kernel of conv.inc for the instruction set of `conv_kernel` (its name's last
// part) that takes calib_wide() on this CPU ("" when none).
std::string calib_igemm_kernel(const std::string& conv_kernel);
// Everything the host preset needs but the conv calibration, measured now on `threads` threads:
// peak, memcpy, dispatch, the plan's dominant conv kernel (`conv_kernel`) and its tile, and for
// the igemm kernel the L2 / L3 / DRAM read bandwidths.
target::HostMeasurements measure_host_rates(const plan::Program& p, int threads, std::string* conv_kernel);
// Puts a conv calibration into m (the highest peak seen with it); for a kernel the calibration
// does not model (or when it failed), the kernel's plain efficiency on the wide shape.
void apply_conv_calibration(const ConvCalibration& c, const std::string& kernel, target::HostMeasurements* m);
// All of it, the conv calibration in kCalibRounds rounds of its own.
target::HostMeasurements measure_host(const plan::Program& p, int threads);

struct MeasuredStep {
  std::string name, op;
  double ms = 0;                // median over the timed runs
  std::vector<double> runs_ms;  // the step's time in each timed run, in run order (may be empty)
};

struct CheckLayer {
  std::string name, op;
  double predicted_ms = 0, measured_ms = 0, error_pct = 0;
  double q25_ms = 0, q75_ms = 0;  // run-to-run spread: quartiles over the timed runs
  double top_share = 0;           // share of bootstrap resamples of the runs with it in the measured top
};

// A layer in one top set and not the other: predicted-only against measured-only, with the
// share of bootstrap resamples in which the predicted-only layer ranks at or above the other.
struct TopSwap {
  std::string predicted_only, measured_only;
  double predicted_only_ms = 0, measured_only_ms = 0;  // measured medians
  double share = 0;
  bool separated = false;  // share < kInseparableShare: the runs do order them
};

struct CheckReport {
  std::string model;
  int threads = 1, iters = 0;
  int64_t batch = 1;
  target::HostMeasurements host;
  std::vector<CheckLayer> layers;  // runtime step order
  double predicted_ms = 0, measured_ms = 0, error_pct = 0;
  // The layers' measured medians summed: what the median run would be without the runs' slow
  // moments, which land on different steps in different runs (on a 2-core Zen 5, MobileNetV2's
  // median run was 5-6% longer than this sum; between its steps a run spends ~10 us).
  double steps_ms = 0;
  // The verdict: the total within kTotalTolerancePct of the median run, and Spearman's rank
  // correlation of predicted and measured per-layer times (every step measured) at least
  // kMinSpearman. A strict top-5 match is decided by run-to-run noise on a shared machine (the
  // measured top 5 of ResNet-50 was 6 different sets over 56 invocations), so it stays
  // information (below), not the verdict.
  double spearman = 0;
  int ranked = 0;  // steps in the rank correlation
  bool total_ok = false, rank_ok = false, pass = false;
  std::vector<std::string> top_predicted, top_measured;  // most expensive first
  bool top_match = false;                                // same set of names
  // The measured set is a top-`top` of the prediction once layers predicted exactly as long as
  // the last predicted place (identical shapes) may stand in for one another.
  bool top_match_ties = false;
  // Statistically: every swap is a pair of layers whose order the runs themselves cannot
  // establish (host_check_stats.h: the predicted-only layer ranks at or above the measured-only
  // one in at least kInseparableShare of the resamples). Equal to top_match when nothing swaps.
  bool top_match_noise = false;
  int top_overlap = 0;               // layers in both sets
  std::vector<TopSwap> top_swaps;    // every predicted-only x measured-only pair
  int resamples = 0, runs = 0;       // the bootstrap behind top_share and the swaps
};

constexpr double kTotalTolerancePct = 25;
constexpr double kMinSpearman = 0.9;

// 100 * (predicted - measured) / measured (0 when nothing was measured).
double error_pct(double predicted, double measured);
// Pairs simulated layers with measured steps by name; `measured_total_ms` is the median run.
// With per-run times on the steps, also the spread, the bootstrap top shares and the swaps.
CheckReport compare_prediction(const sim::SimReport& r, const std::vector<MeasuredStep>& steps,
                               double measured_total_ms, int top = 5, int resamples = 2000);

struct CheckOptions {
  int threads = 0;  // 0: one per core
  int iters = 30, warmup = 3;
};
// Measures the host, simulates `p` on it, times `p` in a profiling Session and compares.
Expected<CheckReport> check_host(std::shared_ptr<const plan::Program> p, const CheckOptions& o);

std::string format_check(const CheckReport& c);
nlohmann::json check_json(const CheckReport& c);

}  // namespace systolic::sim
