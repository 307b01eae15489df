// The machine's measured fp32 peak (all threads), measured once per process.
#pragma once

namespace systolic::tools {
double measured_fp32_peak_gflops(int threads);
}
