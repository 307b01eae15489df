#!/usr/bin/env bash
# Runs every test: sets up and builds (scripts/setup.sh), then the unit, kernel, model and CLI
# tests (ctest) and the ONNX backend conformance suite from Debian's libonnx-testdata.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

# ctest fails when no test is found, so an empty run cannot pass.
(cd build && ctest --output-on-failure --no-tests=error -j"$(nproc)" --timeout 900)

data=/usr/share/libonnx-testdata/data
total_pass=0
for suite in node pytorch-converted pytorch-operator simple; do
  echo "== ONNX backend suite: $suite"
  out=$(build/systolic onnx-suite --failures-only "$data/$suite") || { echo "$out"; exit 1; }
  echo "$out" | tail -n 1
  passed=$(echo "$out" | tail -n 1 | awk '{print $1}')
  total_pass=$((total_pass + passed))
done
if [ "$total_pass" -eq 0 ]; then
  echo "ONNX backend suite: no case passed (no test ran?)" >&2
  exit 1
fi
echo "all tests passed"
