#!/usr/bin/env bash
# compare.sh: systolic vs ONNX Runtime, interleaved rounds on zoo models; prints a Markdown table.
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/compare.sh [--models "resnet50 mobilenet_v2 resnet18"] [--batches "1 16"]
                        [--threads 2] [--rounds 3] [--iters 20] [--warmup 3] [--precision fp32|int8|bf16]
Builds missing zoo models into build/zoo/ (resnet18, resnet50, mobilenet_v2; the models of
tests/export_torchvision.py -- vit_b_16, swin_t, convnext_tiny, deeplabv3_mobilenet_v3_large,
text_detector, ... -- are exported there with PyTorch), then for each model and batch runs build/systolic
and ONNX Runtime (bench/ort_bench.js) alternately for --rounds rounds and reports the median.
--precision int8: both engines run the same QDQ model, written once per zoo model by
`systolic quantize MODEL.onnx --calibration random:16 -o build/zoo/MODEL_int8.onnx`.
--precision bf16: systolic runs bf16; ONNX Runtime (no bf16 on CPU) runs fp32.
Environment: SYSTOLIC (binary, default build/systolic), ZOO_DIR (default build/zoo).
EOF
}

die() { echo "compare.sh: $*" >&2; exit 1; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
models="resnet50 mobilenet_v2 resnet18"
batches="1 16"
threads=2 rounds=3 iters=20 warmup=3 precision=fp32
while [[ $# -gt 0 ]]; do
  [[ $1 == -h || $1 == --help ]] && { usage; exit 0; }
  [[ $# -ge 2 ]] || die "missing value for $1 (see --help)"
  case $1 in
    --models) models=$2 ;; --batches) batches=$2 ;; --threads) threads=$2 ;;
    --rounds) rounds=$2 ;; --iters) iters=$2 ;; --warmup) warmup=$2 ;; --precision) precision=$2 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
  shift 2
done
for v in "$threads" "$rounds" "$iters" $batches; do
  [[ $v =~ ^[0-9]+$ && $v -gt 0 ]] || die "not a positive integer: '$v'"
done
[[ $warmup =~ ^[0-9]+$ ]] || die "--warmup: not a non-negative integer: '$warmup'"
[[ $precision == fp32 || $precision == int8 || $precision == bf16 ]] || die "--precision: fp32, int8 or bf16, not '$precision'"
[[ -n ${models// /} && -n ${batches// /} ]] || die "--models and --batches must not be empty"

SYSTOLIC=${SYSTOLIC:-$ROOT/build/systolic}
ZOO_DIR=${ZOO_DIR:-$ROOT/build/zoo}
[[ -x $SYSTOLIC ]] || die "$SYSTOLIC not found or not executable: build it first (cmake --build build)"
command -v node >/dev/null || die "node not found: install Node.js (ONNX Runtime runs through onnxruntime-node)"
[[ -d $ROOT/bench/node_modules/onnxruntime-node ]] ||
  die "bench/node_modules/onnxruntime-node missing: run 'npm install' in bench/"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$ZOO_DIR"
for m in $models; do
  if [[ ! -s $ZOO_DIR/$m.onnx ]]; then
    if "$SYSTOLIC" zoo --help 2>/dev/null | grep -qw "$m"; then
      echo "building zoo model $m -> $ZOO_DIR/$m.onnx" >&2
      "$SYSTOLIC" zoo "$m" -o "$work/$m.onnx" >&2 || die "'systolic zoo $m' failed"
    else
      echo "exporting $m with PyTorch -> $ZOO_DIR/$m.onnx" >&2
      (cd "$work" && /usr/bin/python3 "$ROOT/tests/export_torchvision.py" "$m" >&2) ||
        die "'tests/export_torchvision.py $m' failed (a zoo model or one of its specs?)"
    fi
    mv "$work/$m.onnx" "$ZOO_DIR/$m.onnx"
  fi
  if [[ $precision == int8 && ! -s $ZOO_DIR/${m}_int8.onnx ]]; then
    echo "quantizing $m -> $ZOO_DIR/${m}_int8.onnx (QDQ, calibrated on random inputs)" >&2
    "$SYSTOLIC" quantize "$ZOO_DIR/$m.onnx" --calibration random:16 -o "$work/${m}_int8.onnx" >&2 ||
      die "'systolic quantize $m' failed"
    mv "$work/${m}_int8.onnx" "$ZOO_DIR/${m}_int8.onnx"
  fi
done

# run ENGINE MODEL BATCH ROUND: saves the tool's stdout and lists it in the manifest.
failures=0 n=0
run() {
  local engine=$1 m=$2 b=$3 round=$4 out=$work/run$((++n)).out ok=1
  local model=$ZOO_DIR/$m.onnx sprec=()
  [[ $precision == int8 ]] && model=$ZOO_DIR/${m}_int8.onnx
  [[ $precision == bf16 ]] && sprec=(--precision bf16)
  if [[ $engine == systolic ]]; then
    "$SYSTOLIC" bench "$model" --batch "$b" --threads "$threads" --iters "$iters" "${sprec[@]}" --json \
      >"$out" 2>"$work/err" || ok=0
  else
    node "$ROOT/bench/ort_bench.js" "$model" --batch "$b" --threads "$threads" \
      --iters "$iters" --warmup "$warmup" >"$out" 2>"$work/err" || ok=0
  fi
  if ((ok)); then
    printf '%s\t%s\t%s\t%s\n' "$engine" "$m" "$b" "$out" >>"$work/manifest"
  else
    echo "compare.sh: $engine failed on $m batch $b (round $round):" >&2
    tail -n 5 "$work/err" >&2
    failures=$((failures + 1))
  fi
}

touch "$work/manifest"
for m in $models; do
  for b in $batches; do
    echo "measuring $m batch $b ($rounds rounds, $iters iters, $threads threads)" >&2
    for ((r = 1; r <= rounds; r++)); do
      # Alternate which engine goes first so drift on a noisy machine hits both equally.
      if ((r % 2)); then order="systolic ort"; else order="ort systolic"; fi
      for e in $order; do run "$e" "$m" "$b" "$r"; done
    done
  done
done

cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || true)
echo "systolic vs ONNX Runtime ($precision): ${cpu:-unknown CPU}, $threads threads, median of $rounds rounds x $iters iters"
echo
node - "$work/manifest" "$models" "$batches" <<'EOF' || failures=$((failures + 1))
const fs = require('fs');
const [manifest, models, batches] = process.argv.slice(2);
const groups = new Map();  // "model/batch" -> {model, batch, systolic: [], ort: []}
for (const m of models.split(/\s+/).filter(Boolean))
  for (const b of batches.split(/\s+/).filter(Boolean))
    groups.set(`${m}/${b}`, { model: m, batch: b, systolic: [], ort: [] });
let bad = 0;
// A tool's stdout: one JSON object, possibly pretty-printed, possibly after log lines.
function parseOutput(text) {
  try { return JSON.parse(text); } catch {}
  const lines = text.trimEnd().split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    if (!lines[i].startsWith('{')) continue;
    try { return JSON.parse(lines.slice(i).join('\n')); } catch {}
  }
  return null;
}
for (const l of fs.readFileSync(manifest, 'utf8').split('\n').filter(Boolean)) {
  const [engine, model, batch, file] = l.split('\t');
  const r = parseOutput(fs.readFileSync(file, 'utf8'));
  if (!r) {
    console.error(`compare.sh: ${engine} on ${model} batch ${batch} printed no JSON`);
    bad++;
    continue;
  }
  groups.get(`${model}/${batch}`)[engine].push(r);
}
const median = (rs, key) => {
  const v = rs.map(r => Number(r[key])).filter(Number.isFinite).sort((a, b) => a - b);
  if (!v.length) return NaN;
  const h = v.length >> 1;
  return v.length % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
};
const f = (x, d) => (Number.isFinite(x) ? x.toFixed(d) : 'n/a');
console.log('| model | batch | systolic p50 ms | ORT p50 ms | latency ratio (ORT/systolic) |' +
            ' systolic img/s | ORT img/s | throughput ratio (systolic/ORT) | systolic GFLOP/s |');
console.log('|---|--:|--:|--:|--:|--:|--:|--:|--:|');
const precisions = new Set();
for (const g of groups.values()) {
  g.systolic.forEach(r => r.precision && precisions.add(r.precision));
  const sp = median(g.systolic, 'p50_ms'), op = median(g.ort, 'p50_ms');
  const st = median(g.systolic, 'throughput_per_s'), ot = median(g.ort, 'throughput_per_s');
  console.log(`| ${g.model} | ${g.batch} | ${f(sp, 2)} | ${f(op, 2)} | ${f(op / sp, 2)} | ` +
              `${f(st, 1)} | ${f(ot, 1)} | ${f(st / ot, 2)} | ${f(median(g.systolic, 'gflops'), 1)} |`);
}
console.log(`\nRatios > 1 mean systolic is faster. systolic precision: ${[...precisions].join(', ') || 'n/a'}.`);
process.exit(bad ? 1 : 0);
EOF
((failures == 0)) || die "$failures run(s) failed; their cells show n/a"
