#!/usr/bin/env bash
# classify_compare.sh: `systolic classify` over a directory of JPEGs against `systolic bench` on
# pre-decoded tensors (same plan and batch) and against a straightforward PIL/torchvision +
# ONNX Runtime pipeline on the same images; prints a Markdown table with the ratios.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: bench/classify_compare.sh [--model resnet50] [--count 1000] [--batch 1] [--threads 2]
                                 [--loaders 1] [--rounds 1] [--precision fp32|bf16|int8] [--no-peer]
Makes --count synthetic JPEGs (bench/make_images.py, cached in build/images-COUNT), compiles the
zoo model with --preprocess imagenet for --batch, then per round runs: systolic bench (random
uint8 images already in memory), systolic classify (files decoded, resized and cropped in the
pipeline), and bench/pil_ort_classify.py (PIL + ONNX Runtime fp32, one image after the other).
--precision int8 compiles an int8 image plan (calibrated on 16 random images: speed only).
Environment: SYSTOLIC (binary, default build/systolic).
USAGE
}
die() { echo "classify_compare.sh: $*" >&2; exit 1; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
model=resnet50 count=1000 batch=1 threads=2 loaders=1 rounds=1 peer=1 precision=fp32
while [[ $# -gt 0 ]]; do
  [[ $1 == -h || $1 == --help ]] && { usage; exit 0; }
  [[ $1 == --no-peer ]] && { peer=0; shift; continue; }
  [[ $# -ge 2 ]] || die "missing value for $1 (see --help)"
  case $1 in
    --model) model=$2 ;; --count) count=$2 ;; --batch) batch=$2 ;; --threads) threads=$2 ;;
    --loaders) loaders=$2 ;; --rounds) rounds=$2 ;; --precision) precision=$2 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
  shift 2
done
for v in "$count" "$batch" "$threads" "$loaders" "$rounds"; do
  [[ $v =~ ^[0-9]+$ && $v -gt 0 ]] || die "not a positive integer: '$v'"
done
[[ $precision == fp32 || $precision == bf16 || $precision == int8 ]] || die "--precision: fp32, bf16 or int8, not '$precision'"
SYSTOLIC=${SYSTOLIC:-$ROOT/build/systolic}
[[ -x $SYSTOLIC ]] || die "$SYSTOLIC not found: build it first"
zoo=$ROOT/build/zoo images=$ROOT/build/images-$count
mkdir -p "$zoo"
[[ -f $zoo/$model.onnx ]] || "$SYSTOLIC" zoo "$model" -o "$zoo/$model.onnx" >/dev/null
if [[ ! -f $images/.complete ]]; then
  rm -rf "$images"
  /usr/bin/python3 "$ROOT/bench/make_images.py" --count "$count" --out "$images" --seed 1 >&2
  touch "$images/.complete"
fi
plan=$zoo/$model-image-$precision-b$batch.plan
"$SYSTOLIC" compile "$zoo/$model.onnx" --preprocess imagenet --batch "$batch" --precision "$precision" -o "$plan" \
  >/dev/null 2>&1 || die "compile failed"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
json() { /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$@"; }

bench_v=() classify_v=() peer_v=() busy_load=() neck=()
# bench runs about as many images as classify does, so both see the same machine state.
iters=$(( (count + batch - 1) / batch )); (( iters > 200 )) && iters=200
for ((r = 1; r <= rounds; r++)); do
  "$SYSTOLIC" bench "$plan" --batch "$batch" --threads "$threads" --iters "$iters" --json > "$tmp/bench.json"
  bench_v+=("$(json "$tmp/bench.json" throughput_per_s)")
  "$SYSTOLIC" classify "$plan" --images "$images" --threads "$threads" --loaders "$loaders" --quiet \
    -o "$tmp/results.csv" --summary-json "$tmp/summary.json" > /dev/null
  classify_v+=("$(json "$tmp/summary.json" throughput_per_s)")
  neck+=("$(json "$tmp/summary.json" bottleneck)")
  if (( peer )); then
    /usr/bin/python3 "$ROOT/bench/pil_ort_classify.py" "$zoo/$model.onnx" --images "$images" --threads "$threads" > "$tmp/peer.json"
    peer_v+=("$(/usr/bin/python3 -c "import json,sys; print(json.loads(open(sys.argv[1]).readline())['throughput_per_s'])" "$tmp/peer.json")")
  fi
  echo "round $r: bench ${bench_v[-1]} img/s, classify ${classify_v[-1]} img/s (bottleneck ${neck[-1]})${peer_v:+, PIL+ORT ${peer_v[-1]} img/s}" >&2
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
b=$(median "${bench_v[@]}") c=$(median "${classify_v[@]}")
echo "| model | precision | batch | images | systolic bench img/s | systolic classify img/s | classify / bench | PIL+ORT img/s | classify / PIL+ORT |"
echo "|---|---|---|---|---|---|---|---|---|"
if (( peer )); then
  p=$(median "${peer_v[@]}")
  awk -v m="$model" -v pr="$precision" -v bt="$batch" -v n="$count" -v b="$b" -v c="$c" -v p="$p" \
    'BEGIN { printf "| %s | %s | %d | %d | %.1f | %.1f | %.2f | %.1f | %.2fx |\n", m, pr, bt, n, b, c, c / b, p, c / p }'
else
  awk -v m="$model" -v pr="$precision" -v bt="$batch" -v n="$count" -v b="$b" -v c="$c" \
    'BEGIN { printf "| %s | %s | %d | %d | %.1f | %.1f | %.2f | - | - |\n", m, pr, bt, n, b, c, c / b }'
fi
