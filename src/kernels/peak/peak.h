// Calibration loops: independent chains of one precision's multiply-accumulate instruction that
// run the vector or matrix units at their peak, so reports can show achieved FLOP/s (or integer
// OP/s) against what this machine really does. Each loop keeps its accumulators in registers.
#pragma once
#include <cstddef>
#include <cstdint>

#include "base/cpu.h"

namespace systolic::kernels {

// fp32: `iters` rounds of FMAs on the widest unit available; returns the flops done (2 per FMA).
// The result written to *sink keeps the compiler from removing the work.
double peak_fp32_avx2(int64_t iters, float* sink);
double peak_fp32_avx512(int64_t iters, float* sink);
double peak_fp32(const CpuFeatures& cpu, int64_t iters, float* sink);

// int8 dot products, u8 x s8 or s16 x s16 into s32; each returns the integer ops done (2 per
// multiply-accumulate, as Session::flops() counts int8 convs).
double peak_int8_avx2(int64_t iters, int32_t* sink);        // vpmaddwd + vpaddd on int16 pairs, ymm
double peak_int8_avxvnni(int64_t iters, int32_t* sink);     // vpdpbusd ymm (VEX)
double peak_int8_avx512vnni(int64_t iters, int32_t* sink);  // vpdpbusd zmm
double peak_int8_amx(int64_t iters, int32_t* sink);         // tdpbusd on 16x64-byte tiles
// bf16 dot products into fp32; each returns the flops done (2 per multiply-accumulate).
double peak_bf16_avx512bf16(int64_t iters, float* sink);    // vdpbf16ps zmm
double peak_bf16_amx(int64_t iters, float* sink);           // tdpbf16ps on 16x64-byte tiles

// One calibration loop as reports name it. `run` returns the operations done and writes a
// value derived from the accumulators to *sink; `iters` takes about 20-40 ms on one core.
struct PeakLoop {
  const char* precision;    // fp32, int8 or bf16
  const char* instruction;  // what runs, e.g. "vpdpbusd zmm (avx512-vnni)"
  bool (*available)(const CpuFeatures&);
  double (*run)(int64_t iters, double* sink);
  int64_t iters;
};

// Every loop, fastest instruction of each precision first. A loop runs only where available().
const PeakLoop* peak_loops(std::size_t* count);

}  // namespace systolic::kernels
