#!/usr/bin/env bash
# The tests under AddressSanitizer + UndefinedBehaviorSanitizer, built with clang into
# build-san/ (scripts/sanitized_build.sh), in stages that each build only what they run:
#   kernels  the kernel tests on this machine's instruction sets and capped to AVX2 (so an
#            out-of-bounds vector load in a tail or pad is caught even where it would not crash)
#   suite    the ONNX backend suite through the CLI
#   unit     the unit, model and CLI tests (ctest: the gtest cases and the fuzz targets' replay
#            of their checked-in corpus)
#   scripts/sanitize.sh [STAGE...]        (default: kernels suite unit)
# Any sanitizer report fails the test it occurs in; so does a stage in which no test ran.
set -euo pipefail
cd "$(dirname "$0")/.."
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(kernels suite unit)
for s in "${stages[@]}"; do
  case $s in kernels|suite|unit) ;; *) echo "sanitize: unknown stage $s (kernels, suite, unit)" >&2; exit 2 ;; esac
done
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1

for stage in "${stages[@]}"; do
  case $stage in
    kernels)
      scripts/sanitized_build.sh systolic_kernels_tests
      isas=(native avx2)
      # Without AVX-512 or AVX-VNNI the native run is the AVX2 run.
      grep -qwE 'avx512f|avx_vnni' /proc/cpuinfo || isas=(native)
      for isa in "${isas[@]}"; do
        echo "== kernel tests under ASan+UBSan, SYSTOLIC_ISA=$isa"
        out=$(SYSTOLIC_ISA=$isa build-san/systolic_kernels_tests 2>&1) || { echo "$out" | tail -60; exit 1; }
        summary=$(echo "$out" | grep -E '^\[  PASSED  \] [0-9]+ tests?' || true)
        [ -n "$summary" ] || { echo "$out" | tail -20; echo "sanitize: no kernel test ran" >&2; exit 1; }
        echo "$summary"
      done
      ;;
    suite)
      scripts/sanitized_build.sh systolic
      echo "== ONNX backend suite under ASan+UBSan"
      for suite in node pytorch-converted pytorch-operator simple; do
        out=$(build-san/systolic onnx-suite --failures-only "/usr/share/libonnx-testdata/data/$suite" 2>&1) ||
          { echo "$out" | tail -40; exit 1; }
        echo "$suite: $(echo "$out" | tail -n 1)"
        passed=$(echo "$out" | tail -n 1 | awk '{print $1}')
        [ "${passed:-0}" -gt 0 ] || { echo "sanitize: no case of $suite passed (no test ran?)" >&2; exit 1; }
      done
      ;;
    unit)
      replays=()
      for f in fuzz/*.cc; do replays+=("fuzz_replay_$(basename "$f" .cc)"); done
      scripts/sanitized_build.sh systolic systolic_tests "${replays[@]}"
      echo "== unit, model and CLI tests under ASan+UBSan"
      # The script tests (PyTorch exports, ONNX Runtime, the server on loopback) run in the main job.
      # With the kernels at -O0 a whole-model test takes minutes here (ResNet-18 across every
      # instruction set: 340 s on a 2-core Zen 1); SANITIZE_TEST_TIMEOUT bounds each test.
      (cd build-san && ctest --output-on-failure --no-tests=error -j"$(nproc)" --timeout "${SANITIZE_TEST_TIMEOUT:-1800}" -L '^unit$')
      ;;
  esac
done
echo "sanitize: ${stages[*]} passed under ASan+UBSan"
