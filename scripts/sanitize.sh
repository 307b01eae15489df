#!/usr/bin/env bash
# The kernel tests under AddressSanitizer: a separate build in build-asan/ (RelWithDebInfo, so
# the vector code is the optimized one), run on this machine's instruction sets and capped to
# AVX2, so an out-of-bounds vector load in a tail or pad is caught even where it would not crash.
# Needs what scripts/setup.sh installs.
set -euo pipefail
cd "$(dirname "$0")/.."
flags="-fsanitize=address -fno-omit-frame-pointer"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address" >/dev/null
cmake --build build-asan -j"$(nproc)" --target systolic_kernels_tests
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
for isa in native avx2; do
  echo "== kernel tests under ASan, SYSTOLIC_ISA=$isa"
  out=$(SYSTOLIC_ISA=$isa build-asan/systolic_kernels_tests 2>&1) || { echo "$out" | tail -40; exit 1; }
  summary=$(echo "$out" | grep -E '^\[  PASSED  \] [0-9]+ tests?' || true)
  [ -n "$summary" ] || { echo "$out" | tail -20; echo "sanitize: no test ran" >&2; exit 1; }
  echo "$summary"
done
echo "kernel tests passed under ASan"
