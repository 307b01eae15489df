// CpuFeatures::bf16_rate: vdpbf16ps against vfmadd231ps on zmm, 12 independent accumulators each
// (enough to cover latency on two ports), timed in 5 alternating rounds of 0.1-0.2 ms; the best
// round of each counts, so a preempted round does not decide.
#include <immintrin.h>

#include <algorithm>
#include <chrono>

#include "base/cpu.h"

namespace systolic {
namespace {

constexpr int kChains = 12;
constexpr int kIters = 32768;

// Seconds for kIters x kChains instructions of one kind; the result feeds a volatile sink.
template <bool BF16>
double time_loop() {
  __m512 acc[kChains];
  for (__m512& a : acc) a = _mm512_setzero_ps();
  const __m512 x = _mm512_set1_ps(1e-3f), y = _mm512_set1_ps(0.5f);
  const __m512bh xb = _mm512_cvtne2ps_pbh(x, x), yb = _mm512_cvtne2ps_pbh(y, y);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kIters; ++i)
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) {
      if constexpr (BF16) acc[c] = _mm512_dpbf16_ps(acc[c], xb, yb);
      else acc[c] = _mm512_fmadd_ps(x, y, acc[c]);
      __asm__("" : "+v"(acc[c]));
    }
  const auto t1 = std::chrono::steady_clock::now();
  __m512 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm512_add_ps(s, acc[c]);
  static volatile float sink;
  sink = _mm512_reduce_add_ps(s);
  return std::chrono::duration<double>(t1 - t0).count();
}

}  // namespace

CpuFeatures::Bf16Rate measure_bf16_rate() {
  // FLOP per instruction: 16 lanes x 2 pairs x 2 (vdpbf16ps), 16 lanes x 2 (vfmadd231ps).
  constexpr double kWork = double(kIters) * kChains * 16;
  CpuFeatures::Bf16Rate r;
  time_loop<true>();  // warm up (clock, license)
  for (int round = 0; round < 5; ++round) {
    const double tb = time_loop<true>(), tf = time_loop<false>();
    if (tb > 0) r.dpbf16ps = std::max(r.dpbf16ps, kWork * 4 / tb / 1e9);
    if (tf > 0) r.fma = std::max(r.fma, kWork * 2 / tf / 1e9);
  }
  return r;
}

}  // namespace systolic
