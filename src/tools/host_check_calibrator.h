// The conv calibration behind `simulate --target host --check`, in rounds: each round times one
// call of each calibration conv (tools/host_check.h: calib_wide, _narrow, _stem, _strided) and
// one short FMA peak loop, back to back, so a burst of load from another process lands on one
// round's shapes alike; the solve then uses per-round ratios to the wide conv.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "base/threadpool.h"
#include "target/target.h"
#include "tools/host_check.h"

namespace systolic::tools {

// Seconds per call of each calibration conv and the FMA peak (GFLOP/s), one entry per round
// (<= 0: the kernel does not take that shape).
struct CalibrationRounds {
  std::vector<double> wide_s, narrow_s, stem_s, strided_s, peak_gflops;
};

// The wide conv's time is its median round; each other conv's is the wide one times
// the median over rounds of their ratio to the wide conv of the same round; the peak is the
// highest seen (m's included): what solve_conv_calibration then turns into rates.
ConvCalibration solve_calibration_rounds(const target::HostMeasurements& m, double dispatch_us,
                                         const CalibrationRounds& r);

// The four calibration convs set up once (data, packed weights, workspace) on a pool of
// `threads`, each run twice to warm up; round() adds one timed call of each and a peak sample.
class ConvCalibrator {
 public:
  ConvCalibrator(const std::string& kernel, int threads);
  ~ConvCalibrator();
  bool ok() const;  // the kernel exists and takes the wide shape
  void round();
  const CalibrationRounds& rounds() const { return rounds_; }

 private:
  struct Conv;
  std::vector<std::unique_ptr<Conv>> convs_;  // wide, narrow, stem, strided
  int threads_ = 1;
  ThreadPool pool_;
  CalibrationRounds rounds_;
};

}  // namespace systolic::tools
