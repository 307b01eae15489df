// The machine's measured peaks per precision (all threads at once), each measured once per
// process and thread count: fp32 FMA, int8 and bf16 dot products on the fastest unit the CPU has.
#pragma once
#include <string>
#include <vector>

namespace systolic::sim {

// One calibration loop measured: G-operations per second (GFLOP/s for fp32 and bf16, GOP/s of
// integer multiply-adds, 2 per MAC, for int8).
struct MeasuredPeak {
  std::string precision;    // fp32, int8, bf16
  std::string instruction;  // "vpdpbusd zmm (avx512-vnni)", or what stands in for it
  double g_per_s = 0;
  bool fallback = false;    // no instruction of its own here: the fp32 FMA peak stands in (bf16)
  // "int8 vpdpbusd zmm (avx512-vnni)", "bf16 as fp32 FMA ymm (avx2) on bf16 storage".
  std::string name() const { return precision + (fallback ? " as " : " ") + instruction; }
};

// Every loop this machine can run, fastest instruction of each precision first.
std::vector<MeasuredPeak> measured_peaks(int threads);

double measured_fp32_peak_gflops(int threads);
double measured_int8_peak_gops(int threads);
// AVX512-BF16 or AMX-BF16 where present, else the fp32 FMA peak (bf16 runs as fp32 FMA on bf16
// storage here).
double measured_bf16_peak_gflops(int threads);
// The peak of the fastest instruction for `precision` ("fp32", "bf16", "int8"; anything else
// is taken as fp32).
MeasuredPeak measured_peak(const std::string& precision, int threads);

// The precision a plan step's kernel computes in, from its name: int8 for the q* families
// (qconv_..., qpool_...), bf16 for a name with "bf16", else fp32.
std::string kernel_precision(const std::string& kernel);

// "GOP" for int8, "GFLOP" for fp32 and bf16: the unit of a plan's work per run.
const char* ops_unit(const std::string& precision);

}  // namespace systolic::sim
