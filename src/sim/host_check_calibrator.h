// The conv calibration behind `simulate --target host --check`, in rounds: each round times one
// call of each calibration conv (sim/host_check.h: calib_wide, _narrow, _stem, _short, _deep,
// _dw, _dw_rows, _dw_strided, _merged, _far, the wide shape on the ISA's Winograd kernels;
// calib_strided and _strided_twin three alternating calls each, of which the round keeps the
// fastest), the runtime's Reorder of an image, a dispatch sample, one short FMA peak loop and one
// read pass over a buffer past the L3, back to back, so a burst of load from another process
// lands on one round's shapes alike; the solve then uses per-round ratios to the wide conv.
// `check` runs a round after each timed run of the model, so the rounds see the load and memory
// traffic the runs see.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "base/threadpool.h"
#include "target/target.h"
#include "sim/host_check.h"

namespace systolic::sim {

// Seconds per call of each calibration conv and the FMA peak (GFLOP/s), one entry per round
// (<= 0: the kernel does not take that shape).
struct CalibrationRounds {
  std::vector<double> wide_s, narrow_s, stem_s, strided_s, short_s, twin_s, deep_s, peak_gflops;
  std::vector<double> winograd_s;  // the wide shape on winograd_kernel (empty: none takes it)
  std::vector<double> dw_s;          // calib_dw() on calib_dw_kernel (empty: none takes it)
  std::vector<double> dw_rows_s;     // calib_dw_rows() on calib_dw_kernel (empty: none takes it)
  std::vector<double> dw_strided_s;  // calib_dw_strided() on calib_dw_kernel (empty: none takes it)
  std::vector<double> merged_s;      // calib_merged(the tile's columns) on the kernel
  std::vector<double> far_s;         // calib_far() on the kernel
  std::vector<double> reorder_s;     // kernels::reorder_f32 over kCalibReorderDims, on the caller
  std::string winograd_kernel;
  std::vector<double> winograd2_s;  // the wide shape on winograd2_kernel (empty: none)
  std::string winograd2_kernel;      // calib_winograd2_kernel
  std::vector<double> dram_gbs;  // one read pass over a buffer twice the L3, all threads
  // The median of 16 empty dispatches on the pool (the per-step cost the runs pay): sampled
  // each round, a core held by another process for a moment moves one round, not the whole
  // calibration (sampled once up front, such a moment once made it 8 ms, every calibration
  // conv's time then went to dispatch and the prediction came out 87% over).
  std::vector<double> dispatch_us;
  // Per probed size (kRereadProbes), the second of two back-to-back read passes over a slice
  // that came from memory: where data one pass has streamed in is read again from.
  std::vector<std::vector<double>> reread_gbs;
};

// The wide conv's time is its median round; each other conv's is the wide one times the median
// over rounds of its ratio to the wide conv of the same round; the DRAM read and re-read
// bandwidths are their median rounds (they replace m's); so is the dispatch cost when sampled
// (else `dispatch_us`); the peak is the highest seen (m's included): what solve_conv_calibration
// then turns into rates.
ConvCalibration solve_calibration_rounds(const target::HostMeasurements& m, double dispatch_us,
                                         const CalibrationRounds& r);

// The calibration convs set up once (data, packed weights, workspace) on a pool of `threads`,
// each run twice to warm up, and a buffer twice the L3; round() adds a dispatch sample, the
// convs' timed calls (above), a peak sample and one read pass over the buffer.
class ConvCalibrator {
 public:
  // `pool`: run on this pool of `threads` (a Session's, so that the rounds can alternate with
  // its runs without two pools' threads competing for the cores); null: a pool of its own.
  ConvCalibrator(const std::string& kernel, int threads, pthreadpool_t pool = nullptr);
  ~ConvCalibrator();
  bool ok() const;  // the kernel exists and takes the wide shape
  void round();
  const CalibrationRounds& rounds() const { return rounds_; }

 private:
  struct Conv;
  // wide, narrow, stem, strided, short, strided twin, deep, Winograd, depthwise (long rows, short
  // rows, strided), merged stem, far 1x1, F(2x2) Winograd
  std::vector<std::unique_ptr<Conv>> convs_;
  std::vector<float> dram_, probe_;           // read by round() in `threads` slices
  std::vector<float> reorder_src_, reorder_dst_;
  std::vector<float> sink_;
  double read_gbs(const float* data, std::size_t n);
  double timed(Conv& c, bool touch_out = false);
  int threads_ = 1;
  ThreadPool own_;
  pthreadpool_t pool_ = nullptr;
  CalibrationRounds rounds_;
};

}  // namespace systolic::sim
