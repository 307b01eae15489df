#!/usr/bin/env bash
# The main job on the embedded default: set up and build, write ResNet-50 with `systolic zoo`,
# compile it to a plan, benchmark it, and print a latency/throughput table side by side with
# ONNX Runtime (when onnxruntime-node is installed).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

mkdir -p build/zoo
model=build/zoo/resnet50.onnx
[ -f "$model" ] || build/systolic zoo resnet50 -o "$model"
build/systolic compile "$model" -o build/zoo/resnet50.plan
echo
build/systolic bench build/zoo/resnet50.plan --iters 20
echo
if [ -d bench/node_modules/onnxruntime-node ]; then
  bench/compare.sh --models resnet50 --batches "1 16" --rounds "${ROUNDS:-1}"
else
  echo "(onnxruntime-node not installed: skipping the side-by-side table)"
fi
