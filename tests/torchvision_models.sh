#!/usr/bin/env bash
# PyTorch exports (torchvision, random weights, opset 13) must import, compile and agree with
# ONNX Runtime (max relative error of every output <= 1e-4): the classic CNN families,
# transformers (ViT, Swin), ConvNeXt, EfficientNetV2, segmentation (DeepLabV3, FCN, LR-ASPP,
# a SegNet-style net of MaxPool indices and MaxUnpool, at batch 3), video classifiers of 3-D
# convs (R3D-18, R(2+1)D-18, on a 4-frame 64x64 clip)
# and OCR-style text detection and recognition (the recognizer's width is symbolic: it runs
# at the width of its input file; a CRNN's BiLSTM and GRU at batch 2), and detectors with their post-processing (SSDlite, Faster
# R-CNN: NonZero, TopK, NonMaxSuppression, RoiAlign and If run in the plan's dynamic tail; the
# same detections as ONNX Runtime's, matched box by box since near-equal scores may order
# differently); int8 keeps biases and transformer residual sums right. Exit 77
# (skipped) when PyTorch/torchvision or onnxruntime-node is missing and not required.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/build/torchvision}
py=/usr/bin/python3
missing=""
$py -c "import torch, torchvision" 2>/dev/null || missing="python3-torch/python3-torchvision"
[ -d "$root/bench/node_modules/onnxruntime-node" ] || missing="$missing onnxruntime-node"
if [ -n "$missing" ]; then
  if [ -n "${SYSTOLIC_REQUIRE_ORT:-}" ]; then echo "missing: $missing" >&2; exit 1; fi
  echo "skipped: missing $missing"; exit 77
fi
models="vgg11 alexnet squeezenet1_0 densenet121 inception_v3 googlenet shufflenet_v2_x1_0 mobilenet_v3_small efficientnet_b0
        vit_b_16 swin_t convnext_tiny efficientnet_v2_s deeplabv3_mobilenet_v3_large fcn_resnet50
        lraspp_mobilenet_v3_large segnet text_detector text_recognizer crnn ssdlite320_mobilenet_v3_large
        fasterrcnn_mobilenet_v3_large_320_fpn r3d_18 r2plus1d_18"
mkdir -p "$out"
cd "$out"
todo=""
for m in $models; do [ -f "$m.onnx" ] || todo="$todo $m"; done
[ -z "$todo" ] || $py "$root/tests/export_torchvision.py" $todo 2>/dev/null | grep -c exported >/dev/null
# A 32x160 text line for the recognizer (ONNX Runtime would pick width 1 for a symbolic dim);
# three images for SegNet, whose max-pool indices count from the batch's first item.
$py -c "import numpy as np; np.save('text_line.npy', np.random.RandomState(0).randn(1, 3, 32, 160).astype(np.float32))"
$py -c "import numpy as np; np.save('segnet_batch.npy', np.random.RandomState(0).randn(3, 3, 96, 96).astype(np.float32))"
$py -c "import numpy as np; np.save('text_lines.npy', np.random.RandomState(1).randn(2, 3, 32, 160).astype(np.float32))"
failed=0
for m in $models; do
  rm -rf "ort_$m" "sys_$m"
  mkdir -p "ort_$m"
  given=""
  [ "$m" != text_recognizer ] || given="input=$out/text_line.npy"
  [ "$m" != segnet ] || given="input=$out/segnet_batch.npy"
  [ "$m" != crnn ] || given="input=$out/text_lines.npy"
  node "$root/bench/ort_run.js" "$m.onnx" "ort_$m" $given > /dev/null
  [ -n "$given" ] || given="input=ort_$m/input.input.npy"
  if ! "$root/build/systolic" run "$m.onnx" --input "$given" --output-dir "sys_$m" > /dev/null; then
    echo "FAIL $m: systolic could not run it"; failed=1; continue
  fi
  if $py - "$m" <<'PY'
import os, sys, numpy as np
m = sys.argv[1]
if not os.path.exists(f"ort_{m}/boxes.npy"):
    a = np.load(f"ort_{m}/logits.npy"); b = np.load(f"sys_{m}/logits.npy")
    err = np.abs(a - b).max() / max(np.abs(a).max(), 1e-12)
    print(f"{m:30s} logits {str(a.shape):18s} max relative error vs ONNX Runtime {err:.2e}")
    sys.exit(0 if a.shape == b.shape and err <= 1e-4 and np.abs(a).max() > 0 else 1)
# Detections: every one of ONNX Runtime's has its own match here (same label, score within
# 1e-4, box within 1e-4 of the image's extent), and the counts agree.
A = [np.load(f"ort_{m}/{n}.npy") for n in ("boxes", "scores", "labels")]
B = [np.load(f"sys_{m}/{n}.npy") for n in ("boxes", "scores", "labels")]
scale = max(np.abs(A[0]).max(), 1e-12)
used = np.zeros(len(B[1]), bool)
unmatched, worst = 0, 0.0
for i in range(len(A[1])):
    c = np.where(~used & (B[2].astype(np.int64) == int(A[2][i])) & (np.abs(B[1] - A[1][i]) <= 1e-4))[0]
    d = np.abs(B[0][c] - A[0][i]).max(1) / scale if len(c) else np.array([np.inf])
    if d.min() > 1e-4:
        unmatched += 1
        continue
    used[c[np.argmin(d)]] = True
    worst = max(worst, d.min())
n = len(A[1])
print(f"{m:30s} {n} detections ({len(np.unique(A[2]))} labels), {unmatched} without a match, worst box error {worst:.2e}")
sys.exit(0 if n > 0 and len(B[1]) == n and unmatched == 0 and A[1].std() > 0 else 1)
PY
  then :; else echo "FAIL $m"; failed=1; fi
done
# int8 (random calibration) against fp32: two networks whose signal fades to tiny ranges with
# random weights, where every bias must stay what the model has (clamped into int32, GoogLeNet's
# logits had cosine -0.03), ViT-B/16, whose residual sums must stay float (0.93 in uint8), and
# SSDlite's class scores before its NMS (its outputs after it reorder with any score change).
for gate in googlenet:0.999 lraspp_mobilenet_v3_large:0.999 vit_b_16:0.995 \
            ssdlite320_mobilenet_v3_large:0.999:/model/Softmax_output_0; do
  IFS=: read -r m min out <<< "$gate"
  c=$("$root/build/systolic" compare "$m.onnx" --precision int8 --calibration random:2 ${out:+--output "$out"} --json 2>/dev/null |
      $py -c "import json, sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])['cosine'])") || c=nan
  echo "$m int8 against fp32${out:+ ($out)}: cosine $c"
  $py -c "import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)" "$c" "$min" ||
    { echo "FAIL $m int8"; failed=1; }
done
exit $failed
