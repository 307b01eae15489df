#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/*.cc) under AddressSanitizer + UndefinedBehaviorSanitizer
# (scripts/sanitized_build.sh, into build-san/) and runs each for SECONDS (default 60), FUZZ_JOBS
# at a time (default: one per core), with libFuzzer's seed FUZZ_SEED (default 1: a run repeats
# the mutations of an earlier one on the same corpus; 0 picks one). Exits non-zero on any crash,
# leak, timeout or out-of-memory and prints the reproducer's path; a target that ran no input
# fails too.
#   scripts/fuzz.sh [SECONDS] [TARGET...]        (targets: the names of fuzz/*.cc)
# Seeds: fuzz/corpus/TARGET (checked in) plus, made here, the ONNX backend suite's models and
# tensors and plans compiled from a few of its models. What a run adds to the corpus stays in
# build-san/fuzz/corpus/TARGET for the next run; reproducers go to build-san/fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in fuzz/*.cc; do targets+=("$(basename "$f" .cc)"); done
fi
for t in "${targets[@]}"; do
  [ -f "fuzz/$t.cc" ] || { echo "fuzz: no target $t (fuzz/$t.cc)" >&2; exit 2; }
done
scripts/sanitized_build.sh systolic "${targets[@]/#/fuzz_}"

out=build-san/fuzz
suite=/usr/share/libonnx-testdata/data
# Kernels capped to AVX2, which every machine of this kind has: the plans made as seeds and the
# paths the targets take are then the same everywhere, so with the same FUZZ_SEED a run repeats
# on another machine what it did here.
export SYSTOLIC_ISA=${SYSTOLIC_ISA:-avx2}
mkdir -p "$out/seeds" "$out/artifacts" "$out/logs"

# Seeds made from the backend suite and this build (once; delete build-san/fuzz/seeds to remake).
seed_dir() { mkdir -p "$out/seeds/$1"; echo "$out/seeds/$1"; }
if [ ! -e "$out/seeds/.done" ]; then
  d=$(seed_dir onnx_compile)
  for m in "$suite"/*/*/model.onnx; do
    cp "$m" "$d/$(basename "$(dirname "$m")").onnx"
  done
  d=$(seed_dir tensor_file)
  i=0
  for p in "$suite"/node/*/test_data_set_0/*.pb; do
    i=$((i + 1)); [ $((i % 8)) -eq 0 ] && cp "$p" "$d/$i.pb"
  done
  /usr/bin/python3 - "$d" <<'PY'
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(0)
for i, dt in enumerate(["<f4", "<f8", "<f2", "|u1", "|i1", "<i2", "<i4", "<i8", "<u2", "<u4", "<u8", "|b1"]):
    a = (rng.standard_normal((2, 3, 4)) * 20).astype(dt)
    np.save(f"{d}/t{i}.npy", a)
np.save(f"{d}/scalar.npy", np.float32(3.5))
np.save(f"{d}/empty.npy", np.zeros((0, 4), np.float32))
with open(f"{d}/v2.npy", "wb") as f:
    np.lib.format.write_array(f, np.ones((3, 5), np.int32), version=(2, 0))
PY
  d=$(seed_dir plan_session)
  for prec in fp32 int8 bf16; do
    build-san/systolic compile fuzz/corpus/onnx_compile/small_cnn.onnx --precision "$prec" -o "$d/small_cnn.$prec.plan" \
      >/dev/null 2>&1
    head -c -8 "$d/small_cnn.$prec.plan" > "$d/small_cnn.$prec.body" && rm "$d/small_cnn.$prec.plan"
  done
  for c in test_conv_with_strides_padding test_relu test_maxpool_2d_pads test_averagepool_2d_pads test_add_bcast \
           test_matmul_2d test_gemm_default_matrix_bias test_softmax_axis_1 test_concat_2d_axis_0 \
           test_globalaveragepool test_batchnorm_example test_qlinearconv test_qlinearmatmul_2D \
           test_resize_upsample_scales_linear test_convtranspose test_layer_normalization_2d_axis0 test_sigmoid; do
    for prec in fp32 bf16; do
      build-san/systolic compile "$suite/node/$c/model.onnx" --precision "$prec" -o "$d/$c.$prec.plan" \
        >/dev/null 2>&1 || rm -f "$d/$c.$prec.plan"
      # The target seals its input with the checksum: the seed is the plan without it.
      [ -f "$d/$c.$prec.plan" ] && head -c -8 "$d/$c.$prec.plan" > "$d/$c.$prec.body" && rm "$d/$c.$prec.plan"
    done
  done
  touch "$out/seeds/.done"
fi

run_one() {
  local t=$1 log="$out/logs/$1.log"
  local args=(-max_total_time="$secs" -seed="${FUZZ_SEED:-1}" -timeout=25 -rss_limit_mb=3072 -print_final_stats=1
              -artifact_prefix="$out/artifacts/$t-")
  case $t in kserve_rest|model_config|target_json) args+=(-dict=fuzz/json.dict) ;; esac
  local dirs=("$out/corpus/$t")
  mkdir -p "$out/corpus/$t"
  [ -d "fuzz/corpus/$t" ] && dirs+=("fuzz/corpus/$t")
  [ -d "$out/seeds/$t" ] && dirs+=("$out/seeds/$t")
  local rc=0
  UBSAN_OPTIONS=print_stacktrace=1 "build-san/fuzz_$t" "${args[@]}" "${dirs[@]}" >"$log" 2>&1 || rc=$?
  local runs cov
  runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | awk '{print $2}' || true)
  cov=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | grep -o 'cov: [0-9]*' | awk '{print $2}' || true)
  if [ "$rc" -ne 0 ]; then
    echo "FAIL $t (exit $rc): $(grep -m1 -E 'ERROR: |runtime error:|SUMMARY:' "$log" || true)"
    grep -o "Test unit written to .*" "$log" | sed 's/Test unit written to /  reproducer: /' || true
    echo "  log: $log"
    return 1
  fi
  if [ -z "$runs" ] || [ "$runs" -eq 0 ]; then
    echo "FAIL $t: no input ran (log: $log)"
    return 1
  fi
  echo "ok   $t: $runs executions in ${secs}s, coverage $cov edges, corpus $(ls "$out/corpus/$t" | wc -l) new inputs"
}

jobs=${FUZZ_JOBS:-$(nproc)}
status=0
pids=()
names=()
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 1; done
  run_one "$t" > "$out/logs/$t.result" &
  pids+=($!)
  names+=("$t")
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || status=1
  cat "$out/logs/${names[$i]}.result"
done
[ "$status" -eq 0 ] && echo "fuzz: ${#targets[@]} targets, ${secs}s each, nothing found" || echo "fuzz: findings above" >&2
exit "$status"
