#!/usr/bin/env bash
# Builds TARGET... into build-san/ with clang under AddressSanitizer and UndefinedBehaviorSanitizer
# (any report aborts), at -O1 but the instruction-set kernel files at -O0 (minutes each at -O1),
# with libFuzzer's coverage instrumentation so the same tree serves the fuzz targets
# (scripts/fuzz.sh) and the sanitized tests (scripts/sanitize.sh). Installs clang and its
# sanitizer runtimes when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=()
for p in clang libclang-rt-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -fsanitize=fuzzer-no-link"
cmake -S . -B build-san -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DCMAKE_CXX_FLAGS="$san -Wno-unknown-warning-option -Wno-unknown-pragmas" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DSYSTOLIC_ISA_EXTRA_FLAGS=-O0 -DSYSTOLIC_FUZZ=ON -DSYSTOLIC_BENCH=OFF -DSYSTOLIC_PYTHON=OFF >/dev/null
cmake --build build-san -j"$(nproc)" --target "$@"
