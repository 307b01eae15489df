// The calibration loops' shape: N independent accumulator chains, each a function parameter so
// that the compiler keeps it in a register (an array of accumulators lives on the stack and is
// stored back every round), each round applying step(acc, a, b) with b alternating between two
// operands as a microkernel's B columns do. Internal linkage: every instruction-set file that
// includes it compiles its own copy with its own flags.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>

namespace systolic::kernels {
namespace {

template <typename V, typename Step, typename Sum, typename... Acc>
__attribute__((always_inline)) inline V peak_rounds(int64_t iters, Step step, Sum sum, V a, V b0, V b1, Acc... acc) {
  for (int64_t it = 0; it < iters; ++it) {
    int k = 0;
    (step(acc, a, k++ & 1 ? b1 : b0), ...);
  }
  V s{};
  ((s = sum(s, acc)), ...);
  return s;
}

// `iters` rounds over N chains started at init(0) ... init(N-1); returns their sum.
template <int N, typename V, typename Step, typename Sum, typename Init>
__attribute__((always_inline)) inline V peak_chains(int64_t iters, Step step, Sum sum, Init init, V a, V b0, V b1) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return peak_rounds(iters, step, sum, a, b0, b1, init(static_cast<int>(I))...);
  }(std::make_index_sequence<N>{});
}

}  // namespace
}  // namespace systolic::kernels
