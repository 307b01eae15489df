#!/usr/bin/env bash
# systolic serve end to end on loopback: builds a Triton-layout repository from the zoo
# ResNet-18 (a batched fp32 model, the same with image input + labels, one with a queue of 2),
# starts the server on free ports, and runs the REST, gRPC and fault clients against it; the
# server must exit 0 after the SIGTERM the fault client sends. Exit 77 (skipped) when
# python3-grpcio, numpy or onnx is missing and not required.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$root/build/systolic
out=${1:-$root/build/serve_test}
py=/usr/bin/python3
if ! $py -c "import grpc, numpy, onnx" 2>/dev/null; then
  if [ -n "${SYSTOLIC_REQUIRE_SERVE:-}" ]; then echo "missing: python3-grpcio / python3-numpy / python3-onnx" >&2; exit 1; fi
  echo "skipped: python3-grpcio, numpy or onnx missing"; exit 77
fi
mkdir -p "$out"
cd "$out"
export SYSTOLIC_CACHE_DIR=$out/cache
[ -f resnet18.onnx ] || "$bin" zoo resnet18 -o resnet18.onnx > /dev/null
rm -rf repo exp
mkdir -p repo/resnet18/1 repo/resnet18_img/1 repo/resnet18_smallq/1 repo/nonzero/1
# Outputs shaped by each run (as detections are): conv + relu, NonZero of the relu, and the
# positive values it points at.
$py - repo/nonzero/1/model.onnx <<'EOF'
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save
w = numpy_helper.from_array(np.random.RandomState(1).randn(4, 3, 3, 3).astype(np.float32) * 0.3, "w")
g = helper.make_graph(
    [helper.make_node("Conv", ["input", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
     helper.make_node("NonZero", ["r"], ["nz"]), helper.make_node("Transpose", ["nz"], ["nzt"], perm=[1, 0]),
     helper.make_node("GatherND", ["r", "nzt"], ["pos"])], "nonzero",
    [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 8, 8])],
    [helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, 4, 8, 8]),
     helper.make_tensor_value_info("nz", TensorProto.INT64, [4, "count"]),
     helper.make_tensor_value_info("pos", TensorProto.FLOAT, ["count"])], [w])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
EOF
for m in resnet18 resnet18_img resnet18_smallq; do ln -f resnet18.onnx repo/$m/1/model.onnx; done
echo '{"max_batch_size": 4, "max_queue_delay_us": 2000, "threads": 2}' > repo/resnet18/config.json
echo '{"max_batch_size": 4, "preprocess": "imagenet", "labels": "labels.txt", "threads": 2}' > repo/resnet18_img/config.json
echo '{"max_batch_size": 1, "max_queue_size": 2, "threads": 2}' > repo/resnet18_smallq/config.json
$py -c "print('\n'.join('class_%d' % i for i in range(1000)))" > repo/resnet18_img/labels.txt
$py -c "import numpy as np; np.save('input.npy', np.random.RandomState(0).randn(1, 3, 224, 224).astype(np.float32))"
"$bin" run resnet18.onnx --input input=input.npy --output-dir exp > /dev/null

# The last run's log goes first: the wait below could read its port before the new server's
# redirection truncates the file.
rm -f server.log
"$bin" serve --model-repository repo --http-port 0 --grpc-port 0 --no-tuned --grace-period 60 2> server.log &
pid=$!
for _ in $(seq 600); do
  grep -q "serving on HTTP port" server.log && break
  kill -0 $pid 2>/dev/null || { cat server.log; echo "FAIL: the server did not start"; exit 1; }
  sleep 0.5
done
grep -q "serving on HTTP port" server.log || { cat server.log; kill $pid; echo "FAIL: no start in 300 s"; exit 1; }
http=$(sed -n 's/.*HTTP port \([0-9]*\).*/\1/p' server.log | head -1)
grpc=$(sed -n 's/.*gRPC port \([0-9]*\).*/\1/p' server.log | head -1)
export SYSTOLIC_HTTP_ADDR=127.0.0.1:$http SYSTOLIC_GRPC_ADDR=127.0.0.1:$grpc
export SYSTOLIC_SERVE_MODEL=resnet18 SYSTOLIC_SERVE_IMAGE_MODEL=resnet18_img SYSTOLIC_SERVE_SMALLQ_MODEL=resnet18_smallq
export SYSTOLIC_SERVE_NONZERO_MODEL=nonzero
export SYSTOLIC_SERVE_INPUT=$out/input.npy SYSTOLIC_SERVE_EXPECTED=$out/exp/logits.npy SYSTOLIC_SERVE_REPO=$out/repo
failed=0
for t in rest_client_test.py grpc_client_test.py; do
  if [ -f "$root/tests/serve/$t" ]; then
    if ! $py "$root/tests/serve/$t" 2>&1 | tail -40; then failed=1; fi
  fi
done
if ! SYSTOLIC_SERVE_PID=$pid $py "$root/tests/serve/faults_test.py" 2>&1 | tail -40; then failed=1; fi
rc=0
for _ in $(seq 120); do kill -0 $pid 2>/dev/null || break; sleep 0.5; done
if kill -0 $pid 2>/dev/null; then echo "FAIL: the server is still running 60 s after SIGTERM"; kill -9 $pid; failed=1
else wait $pid || rc=$?; fi
[ $rc -eq 0 ] || { echo "FAIL: the server exited $rc after SIGTERM"; tail -5 server.log; failed=1; }
[ $failed -eq 0 ] && echo "serve: all clients passed" || { echo "serve: FAILED"; exit 1; }
