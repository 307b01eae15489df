// Picks the fp32 calibration loop for the widest unit (scalar code when there is no FMA unit),
// and the table of every precision's loops with what each needs.
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

namespace {

// The table's uniform signature over each loop's own sink type.
template <typename T, double (*F)(int64_t, T*)>
double as_double(int64_t iters, double* sink) {
  T s{};
  const double ops = F(iters, &s);
  *sink = static_cast<double>(s);
  return ops;
}

bool amx_int8(const CpuFeatures& c) { return c.amx_tile && c.amx_int8; }
bool amx_bf16(const CpuFeatures& c) { return c.amx_tile && c.amx_bf16; }
bool avx512(const CpuFeatures& c) { return c.has_avx512(); }
bool avx512_vnni(const CpuFeatures& c) { return c.has_avx512_vnni(); }
bool avx512_bf16(const CpuFeatures& c) { return c.has_avx512() && c.avx512bf16; }
bool avx_vnni(const CpuFeatures& c) { return c.avx_vnni; }
bool avx2(const CpuFeatures& c) { return c.has_avx2_fma(); }

constexpr PeakLoop kLoops[] = {
    {"fp32", "FMA zmm (avx512)", avx512, as_double<float, peak_fp32_avx512>, 20'000'000},
    {"fp32", "FMA ymm (avx2)", avx2, as_double<float, peak_fp32_avx2>, 20'000'000},
    {"int8", "tdpbusd (amx-int8)", amx_int8, as_double<int32_t, peak_int8_amx>, 500'000},
    {"int8", "vpdpbusd zmm (avx512-vnni)", avx512_vnni, as_double<int32_t, peak_int8_avx512vnni>, 10'000'000},
    {"int8", "vpdpbusd ymm (avx-vnni)", avx_vnni, as_double<int32_t, peak_int8_avxvnni>, 20'000'000},
    {"int8", "vpmaddwd + vpaddd ymm on int16 pairs (avx2)", avx2, as_double<int32_t, peak_int8_avx2>, 20'000'000},
    {"bf16", "tdpbf16ps (amx-bf16)", amx_bf16, as_double<float, peak_bf16_amx>, 500'000},
    {"bf16", "vdpbf16ps zmm (avx512-bf16)", avx512_bf16, as_double<float, peak_bf16_avx512bf16>, 10'000'000},
};

}  // namespace

const PeakLoop* peak_loops(std::size_t* count) {
  *count = sizeof(kLoops) / sizeof(kLoops[0]);
  return kLoops;
}

}  // namespace systolic::kernels
