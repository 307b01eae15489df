#!/usr/bin/env bash
# serve.sh: systolic serve against `systolic bench` in the same run, interleaved rounds, medians.
# - 16 gRPC clients sending batch-1 requests: served throughput / bench's at --bench-batch
#   (default: the serving batch);
# - one client, batch 1, binary REST: p50 minus bench's batch-1 p50 on all the threads;
# - 4x overload (4 x bench's throughput offered open-loop, a queue of one batch): only 200 or
#   503, 503 latency, p99 of the admitted, server RSS after each of four phases: gRPC (each
#   client on its own connection, as separate callers), REST, gRPC with every client on one
#   shared connection, REST;
# - with --image, all of it on the model's image plan (--preprocess imagenet): the clients send
#   uint8 224x224 RGB images, a quarter of the float tensor's bytes, and bench times that plan;
# - SIGTERM under 16 clients: admitted requests that failed (must be 0).
set -euo pipefail

usage() {
  cat <<'USAGE'
usage: bench/serve.sh [--model resnet50] [--precision fp32] [--batch 16] [--delay-us 20000]
                      [--rounds 3] [--seconds 15] [--threads 2] [--instances 1]
                      [--bench-batch B] [--serve-args "FLAGS"] [--image]
--threads is per instance; bench's batch throughput runs the same instances and threads, at
--bench-batch (default --batch). --serve-args: more flags for systolic serve. --image: serve and
bench the image plan (normalisation folded into the first layer); requests are uint8 images.
Environment: SYSTOLIC (binary, default build/systolic), LOAD (the load generator, default
build/systolic_serve_load).
USAGE
}
die() { echo "serve.sh: $*" >&2; exit 1; }
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
model=resnet50 precision=fp32 batch=16 delay=20000 rounds=3 seconds=15 threads=2 instances=1
bench_batch="" serve_args="" image=() load_in=()
while [[ $# -gt 0 ]]; do
  [[ $1 == -h || $1 == --help ]] && { usage; exit 0; }
  if [[ $1 == --image ]]; then
    image=(--preprocess imagenet) load_in=(--datatype UINT8 --shape 1,224,224,3)
    shift
    continue
  fi
  [[ $# -ge 2 ]] || die "missing value for $1 (see --help)"
  case $1 in
    --model) model=$2 ;; --precision) precision=$2 ;; --batch) batch=$2 ;; --delay-us) delay=$2 ;;
    --rounds) rounds=$2 ;; --seconds) seconds=$2 ;; --threads) threads=$2 ;; --instances) instances=$2 ;;
    --bench-batch) bench_batch=$2 ;; --serve-args) serve_args=$2 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
  shift 2
done
bench_batch=${bench_batch:-$batch}
SYSTOLIC=${SYSTOLIC:-$ROOT/build/systolic}
PY=/usr/bin/python3
LOAD=${LOAD:-$ROOT/build/systolic_serve_load}
[[ -x $SYSTOLIC ]] || die "$SYSTOLIC not found: build it first"
[[ -x $LOAD ]] || die "$LOAD not found: build it first (cmake --build build --target systolic_serve_load)"
zoo=$ROOT/build/zoo
mkdir -p "$zoo"
[[ -s $zoo/$model.onnx ]] || "$SYSTOLIC" zoo "$model" -o "$zoo/$model.onnx" >/dev/null
onnx=$zoo/$model.onnx
if [[ $precision == int8 ]]; then
  [[ -s $zoo/${model}_int8.onnx ]] ||
    "$SYSTOLIC" quantize "$onnx" --calibration random:16 -o "$zoo/${model}_int8.onnx" >/dev/null 2>&1
  onnx=$zoo/${model}_int8.onnx
fi
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
json() { $PY -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

start_server() {  # extra flags; sets pid, grpc, http
  rm -f "$work/server.log"  # else the wait can read the last server's port before the redirection truncates it
  "$SYSTOLIC" serve --model "$model=$onnx" --precision "$precision" --max-batch-size "$batch" \
    --threads "$threads" --instances "$instances" --no-tuned --http-port 0 --grpc-port 0 "${image[@]}" $serve_args "$@" 2> "$work/server.log" &
  pid=$!
  for _ in $(seq 1200); do grep -q "serving on" "$work/server.log" && break; sleep 0.5; done
  grep -q "serving on" "$work/server.log" || die "server did not start: $(cat "$work/server.log")"
  http=$(sed -n 's/.*HTTP port \([0-9]*\).*/\1/p' "$work/server.log")
  grpc=$(sed -n 's/.*gRPC port \([0-9]*\).*/\1/p' "$work/server.log")
}
stop_server() { kill -TERM "$pid"; wait "$pid" || true; }
rss_kib() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
bench() { "$SYSTOLIC" bench "$onnx" --precision "$precision" --batch "$1" --threads "${4:-$threads}" --no-tuned "${image[@]}" \
          --iters "$2" --instances "${3:-1}" --json 2>/dev/null; }

start_server --max-queue-delay-us "$delay"
b1_p50=() bb_tp=() g_tp=() r_p50=() g_p50=()
for r in $(seq "$rounds"); do
  # A lone request runs on every instance's threads (the server's wide session).
  o=$(bench 1 20 1 $((threads * instances))); b1_p50+=("$(json "$o" p50_ms)")
  o=$(bench "$bench_batch" 5 "$instances"); bb_tp+=("$(json "$o" throughput_per_s)")
  o=$("$LOAD" grpc --addr "127.0.0.1:$grpc" --model "$model" --clients 16 --seconds "$seconds" "${load_in[@]}")
  g_tp+=("$(json "$o" throughput_per_s)"); g_p50+=("$(json "$o" p50_ms)")
  [[ $(json "$o" errors) == 0 && $(json "$o" rejected) == 0 ]] || echo "round $r: gRPC errors: $o" >&2
  o=$("$LOAD" rest --addr "127.0.0.1:$http" --model "$model" --clients 1 --seconds "$seconds" "${load_in[@]}")
  r_p50+=("$(json "$o" p50_ms)")
  echo "round $r: bench b1 p50 ${b1_p50[-1]} ms, b$bench_batch ${bb_tp[-1]}/s; gRPC x16 ${g_tp[-1]}/s; REST x1 p50 ${r_p50[-1]} ms" >&2
done
stop_server

# Overload: a queue of one batch; 4 x the measured capacity offered open-loop by 4 x batch
# clients; four phases, RSS after each (flat: the later phases do not grow it).
start_server --max-queue-delay-us "$delay" --max-queue-size "$batch"
rate=$($PY -c "print(4 * $(median "${bb_tp[@]}"))")
load() { "$LOAD" "$1" --addr "127.0.0.1:$2" --model "$model" --clients $((4 * batch)) "${load_in[@]}" \
           --rate "$rate" --seconds "$seconds" "${@:3}"; }
# The batch time under this load, from the server's own counters: compute time summed per
# request over requests, i.e. the mean time of the batch each admitted request rode in.
counters() { curl -s "http://127.0.0.1:$http/metrics" | awk -v m="model=\"$model\"" '
  index($0, m) && /^nv_inference_compute_infer_duration_us/ {c += $NF}
  index($0, m) && /^nv_inference_count/ {n += $NF} END {print c, n}'; }
batch_ms() { $PY -c "import sys; a=[float(v) for v in sys.argv[1:]]; print(round((a[2]-a[0])/max(1,a[3]-a[1])/1000, 1))" $1 $2; }
c0=$(counters); over=$(load grpc "$grpc"); rss0=$(rss_kib "$pid")
c1=$(counters); over2=$(load rest "$http"); rss1=$(rss_kib "$pid")
c2=$(counters); over3=$(load grpc "$grpc" --shared-connection); rss2=$(rss_kib "$pid")
c3=$(counters); over4=$(load rest "$http"); rss3=$(rss_kib "$pid")
c4=$(counters)
stop_server

# SIGTERM while 16 clients are sending: every admitted request must succeed.
start_server --max-queue-delay-us "$delay"
"$LOAD" grpc --addr "127.0.0.1:$grpc" --model "$model" --clients 16 --seconds 8 --warmup 0 "${load_in[@]}" > "$work/term.json" &
load=$!
sleep 4
kill -TERM "$pid"
rc=0; wait "$pid" || rc=$?
wait "$load" || true
term=$(cat "$work/term.json")

m_b1=$(median "${b1_p50[@]}") m_bb=$(median "${bb_tp[@]}") m_g=$(median "${g_tp[@]}") m_r=$(median "${r_p50[@]}")
echo
echo "| $model $precision, $instances x $threads threads, serving batch $batch${image:+, uint8 images} ${serve_args:+($serve_args)} | systolic bench | systolic serve | ratio / gap |"
echo "|---|---|---|---|"
printf '| 16 gRPC clients, batch-1 requests (req/s) | %.1f (batch %s) | %.1f | %.2fx |\n' "$m_bb" "$bench_batch" "$m_g" "$($PY -c "print($m_g/$m_bb)")"
printf '| 1 REST client, batch 1, p50 (ms) | %.1f | %.1f | %+.1f ms |\n' "$m_b1" "$m_r" "$($PY -c "print($m_r-$m_b1)")"
echo
echo "4x overload ($rate req/s offered, queue $batch, max_queue_delay $((delay / 1000)) ms):"
echo "  gRPC (batch time $(batch_ms "$c0" "$c1") ms) $over"
echo "  REST (batch time $(batch_ms "$c1" "$c2") ms) $over2"
echo "  gRPC, one shared connection (batch time $(batch_ms "$c2" "$c3") ms) $over3"
echo "  REST again (batch time $(batch_ms "$c3" "$c4") ms) $over4"
echo "server RSS after each phase: $rss0, $rss1, $rss2, $rss3 KiB"
stopped=$(grep "stopped:" "$work/server.log" || echo "no stopped line: $(tail -3 "$work/server.log")")
echo "SIGTERM under load: exit $rc; server: ${stopped#systolic: }"
echo "  clients: $term"
