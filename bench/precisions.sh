#!/usr/bin/env bash
# precisions.sh: systolic's own fp32, bf16 and int8 plans of one zoo model, interleaved rounds;
# prints a Markdown table of median latency and throughput with each precision's ratio to fp32.
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: bench/precisions.sh [--model resnet50] [--batches "1 16"] [--threads 2] [--rounds 3] [--iters 10]
int8 is systolic's own int8 plan of the float model (`--precision int8 --calibration random:16`:
each residual Add requantized once, inside the conv that ends the block); int8-qdq runs the QDQ
model `systolic quantize MODEL.onnx --calibration random:16` writes into build/zoo/MODEL_int8.onnx
(the file bench/compare.sh --precision int8 gives ONNX Runtime: there a residual Add's inputs are
quantized tensors, so the block's end rounds twice).
Environment: SYSTOLIC (binary, default build/systolic).
The throughput is each run's batch over the timed loop's wall time (outliers weigh in); the
last column is fp32's median latency over this precision's, the steadier figure over few iters.
USAGE
}
die() { echo "precisions.sh: $*" >&2; exit 1; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
model=resnet50 batches="1 16" threads=2 rounds=3 iters=10
while [[ $# -gt 0 ]]; do
  [[ $1 == -h || $1 == --help ]] && { usage; exit 0; }
  [[ $# -ge 2 ]] || die "missing value for $1 (see --help)"
  case $1 in
    --model) model=$2 ;; --batches) batches=$2 ;; --threads) threads=$2 ;; --rounds) rounds=$2 ;;
    --iters) iters=$2 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
  shift 2
done
for v in "$threads" "$rounds" "$iters" $batches; do
  [[ $v =~ ^[0-9]+$ && $v -gt 0 ]] || die "not a positive integer: '$v'"
done
SYSTOLIC=${SYSTOLIC:-$ROOT/build/systolic}
[[ -x $SYSTOLIC ]] || die "$SYSTOLIC not found: build it first"
zoo=$ROOT/build/zoo
mkdir -p "$zoo"
[[ -s $zoo/$model.onnx ]] || "$SYSTOLIC" zoo "$model" -o "$zoo/$model.onnx" >/dev/null
if [[ ! -s $zoo/${model}_int8.onnx ]]; then
  "$SYSTOLIC" quantize "$zoo/$model.onnx" --calibration random:16 -o "$zoo/${model}_int8.onnx.tmp.onnx" >/dev/null 2>&1 ||
    die "quantize failed"
  mv "$zoo/${model}_int8.onnx.tmp.onnx" "$zoo/${model}_int8.onnx"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
field() { /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "$@"; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || true)
echo "systolic fp32 / bf16 / int8 on $model: ${cpu:-unknown CPU}, $threads threads, median of $rounds rounds x $iters iters"
echo
echo "| batch | precision | p50 ms | images/s | utilization | x fp32 throughput | x fp32 p50 |"
echo "|---|---|---|---|---|---|---|"
for b in $batches; do
  declare -A p50=() tput=() util=()
  for ((r = 1; r <= rounds; r++)); do
    for prec in fp32 bf16 int8 int8-qdq; do
      src=$zoo/$model.onnx args=(--precision "$prec")
      [[ $prec == int8 ]] && args+=(--calibration random:16)
      [[ $prec == int8-qdq ]] && src=$zoo/${model}_int8.onnx args=()
      "$SYSTOLIC" bench "$src" --batch "$b" --threads "$threads" --iters "$iters" --no-tuned "${args[@]}" --json \
        > "$tmp/out.json" 2> "$tmp/err" || die "bench $prec failed: $(tail -1 "$tmp/err")"
      p50[$prec]+=" $(field "$tmp/out.json" p50_ms)"
      tput[$prec]+=" $(field "$tmp/out.json" throughput_per_s)"
      util[$prec]+=" $(field "$tmp/out.json" utilization)"
    done
  done
  base=$(median ${tput[fp32]}) base_p50=$(median ${p50[fp32]})
  for prec in fp32 bf16 int8 int8-qdq; do
    awk -v b="$b" -v p="$prec" -v l="$(median ${p50[$prec]})" -v t="$(median ${tput[$prec]})" \
      -v u="$(median ${util[$prec]})" -v f="$base" -v fl="$base_p50" \
      'BEGIN { printf "| %d | %s | %.1f | %.1f | %.0f%% | %.2fx | %.2fx |\n", b, p, l, t, 100 * u, t / f, fl / l }'
  done
  unset p50 tput util
done
