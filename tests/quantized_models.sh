#!/usr/bin/env bash
# int8 models from two quantizers, each run by systolic (int8, from the model's own QDQ) and by
# ONNX Runtime on the same file and inputs: PyTorch FX quantization's ONNX export, and the QDQ
# model `systolic quantize` writes (--reduce-range: 7-bit weights, which ORT's AVX2 kernels
# need to be exact) for ResNet-18, MobileNetV2, MobileNetV3-small and EfficientNet-B0. Gates:
# logits cosine >= 0.9999 and max difference <= 2 steps of the output quantization. Exit 77
# (skipped) when PyTorch or onnxruntime-node is missing and not required.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/build/quantized_models}
py=/usr/bin/python3
sys="$root/build/systolic"
missing=""
$py -c "import torch, torchvision, onnx" 2>/dev/null || missing="python3-torch/python3-torchvision/python3-onnx"
[ -d "$root/bench/node_modules/onnxruntime-node" ] || missing="$missing onnxruntime-node"
if [ -n "$missing" ]; then
  if [ -n "${SYSTOLIC_REQUIRE_ORT:-}" ]; then echo "missing: $missing" >&2; exit 1; fi
  echo "skipped: missing $missing"; exit 77
fi
mkdir -p "$out"
cd "$out"
export SYSTOLIC_CACHE_DIR="$out/cache"
models=""
for m in resnet18 mobilenet_v2; do
  [ -f "${m}_torchq.onnx" ] || $py "$root/tests/export_quantized.py" "$m" 2>/dev/null | grep -q exported
  models="$models ${m}_torchq"
  [ -f "$m.onnx" ] || "$sys" zoo "$m" -o "$m.onnx" > /dev/null
  "$sys" quantize "$m.onnx" --calibration random:8 --reduce-range -o "${m}_qdq.onnx" > /dev/null 2>&1
  models="$models ${m}_qdq"
done
# MobileNetV3-small and EfficientNet-B0 (torchvision, random weights): HardSwish, SiLU and
# squeeze-excitation blocks between int8 convs (systolic runs each activation between two
# uint8 grids as a table, ONNX Runtime in float), and a Gemm classifier with 7-bit per-column
# weights.
for m in mobilenet_v3_small efficientnet_b0; do
  [ -f $m.onnx ] || $py "$root/tests/export_torchvision.py" $m 2>/dev/null | grep -q exported
  "$sys" quantize $m.onnx --calibration random:8 --reduce-range -o ${m}_qdq.onnx > /dev/null 2>&1
  models="$models ${m}_qdq"
done
# The same quantization with int8 activations (zero points - 128): systolic turns them back into
# uint8, so its logits must equal the uint8 model's bytes.
$py "$root/tests/qdq_to_s8.py" resnet18_qdq.onnx resnet18_qdq_s8.onnx > /dev/null
models="$models resnet18_qdq_s8"
failed=0
for m in $models; do
  rm -rf "ort_$m" "sys_$m"
  mkdir -p "ort_$m"
  node "$root/bench/ort_run.js" "$m.onnx" "ort_$m" > /dev/null
  if ! "$sys" run "$m.onnx" --input "input=ort_$m/input.input.npy" --output-dir "sys_$m" > "sys_$m.txt" 2>&1; then
    echo "FAIL $m: systolic could not run it"; cat "sys_$m.txt"; failed=1; continue
  fi
  kernels=$("$sys" compile "$m.onnx" --kernels 2>&1 || true)
  if [[ $kernels != *qconv_u8s8* ]]; then
    echo "FAIL $m: systolic did not compile it to int8 kernels"; failed=1; continue
  fi
  gates="0.9999 2"
  if $py - "$m" $gates <<'PY'
import sys, numpy as np, onnx
from onnx import numpy_helper
m, min_cos, max_steps = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
a = np.load(f"ort_{m}/logits.npy").astype(np.float64); b = np.load(f"sys_{m}/logits.npy").astype(np.float64)
g = onnx.load(f"{m}.onnx").graph
inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
consts = {n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in g.node if n.op_type == "Constant"}
last = next(n for n in g.node if g.output[0].name in n.output)
assert last.op_type == "DequantizeLinear", last.op_type
step = float({**inits, **consts}[last.input[1]])
cos = (a * b).sum() / np.sqrt((a * a).sum() * (b * b).sum())
steps = np.abs(a - b).max() / step
print(f"{m:22s} logits {a.shape} vs ONNX Runtime: cosine {cos:.6f}, max difference {steps:.2f} output steps")
sys.exit(0 if a.shape == b.shape and cos >= min_cos and steps <= max_steps + 1e-6 and np.abs(a).max() > 0 else 1)
PY
  then :; else echo "FAIL $m"; failed=1; fi
done
if ! cmp -s sys_resnet18_qdq/logits.npy sys_resnet18_qdq_s8/logits.npy; then
  echo "FAIL resnet18_qdq_s8: logits differ from the uint8 model's"; failed=1
else
  echo "resnet18_qdq_s8        int8 activations: the same logits bytes as uint8"
fi
exit $failed
