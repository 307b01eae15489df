// Calibration loops: independent FMA chains that run the vector units at their peak, so
// reports can show achieved FLOP/s against what this machine really does.
#pragma once
#include <cstdint>

#include "base/cpu.h"

namespace systolic::kernels {

// Runs `iters` rounds of FMAs on the widest fp32 unit available; returns the flops done.
// The result written to *sink keeps the compiler from removing the work.
double peak_fp32_avx2(int64_t iters, float* sink);
double peak_fp32_avx512(int64_t iters, float* sink);
double peak_fp32(const CpuFeatures& cpu, int64_t iters, float* sink);

}  // namespace systolic::kernels
