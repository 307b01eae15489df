// CpuFeatures::bf16_rate: vdpbf16ps against vfmadd231ps on zmm, 12 independent accumulators each
// (enough to cover latency on two ports), timed in 5 alternating rounds of 0.1-0.2 ms; the best
// round of each counts, so a preempted round does not decide.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "base/cpu.h"

namespace systolic {
namespace {

constexpr int kChains = 12;
constexpr int kIters = 32768;

// kIters rounds over the accumulator chains, each a parameter so that the compiler keeps it in
// a register: as an array they lived on the stack, each instruction waiting on a store and a
// load, and the Xeon that grants AMX measured FMA at a quarter of its rate and vdpbf16ps "faster".
template <bool BF16, typename... Acc>
__attribute__((always_inline)) inline __m512 rounds(__m512 x, __m512 y, __m512bh xb, __m512bh yb, Acc... acc) {
  auto step = [&](__m512& a) {
    if constexpr (BF16) a = _mm512_dpbf16_ps(a, xb, yb);
    else a = _mm512_fmadd_ps(x, y, a);
    __asm__("" : "+v"(a));
  };
  for (int i = 0; i < kIters; ++i) (step(acc), ...);
  __m512 s = _mm512_setzero_ps();
  ((s = _mm512_add_ps(s, acc)), ...);
  return s;
}

// Seconds for kIters x kChains instructions of one kind; the result feeds an empty asm.
template <bool BF16>
double time_loop() {
  const __m512 x = _mm512_set1_ps(1e-3f), y = _mm512_set1_ps(0.5f);
  const __m512bh xb = _mm512_cvtne2ps_pbh(x, x), yb = _mm512_cvtne2ps_pbh(y, y);
  const auto t0 = std::chrono::steady_clock::now();
  const __m512 s = [&]<std::size_t... I>(std::index_sequence<I...>) {
    return rounds<BF16>(x, y, xb, yb, (static_cast<void>(I), _mm512_setzero_ps())...);
  }(std::make_index_sequence<kChains>{});
  const auto t1 = std::chrono::steady_clock::now();
  __asm__ volatile("" : : "v"(s));
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
