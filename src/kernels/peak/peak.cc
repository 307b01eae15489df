// Picks the calibration loop for the widest unit; scalar code when there is no FMA unit.
#include "kernels/peak/peak.h"

namespace systolic::kernels {

double peak_fp32(const CpuFeatures& cpu, int64_t iters, float* sink) {
  if (cpu.has_avx512()) return peak_fp32_avx512(iters, sink);
  if (cpu.has_avx2_fma()) return peak_fp32_avx2(iters, sink);
  float acc[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  for (int64_t it = 0; it < iters; ++it)
    for (float& x : acc) x = x * 0.9999f + 1e-6f;
  *sink = acc[0] + acc[7];
  return static_cast<double>(iters) * 8 * 2;
}

}  // namespace systolic::kernels
