#!/usr/bin/python3
"""Bounded load on a running `systolic serve`: N clients (threads), each sending batch-1
requests for S seconds over gRPC (raw_input_contents) or REST (binary tensor extension), back
to back, or with --rate R open-loop (request k is due at k/R seconds, whichever client is
free sends it). Prints one JSON line: requests, ok, rejected (503/UNAVAILABLE), errors (by
kind), served throughput, latency percentiles of the successful requests and of the
rejections."""
import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np


def grpc_stubs():
    import grpc  # noqa: F401  (fail early when python3-grpcio is missing)
    d = tempfile.mkdtemp(prefix="systolic-stubs-")
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "serve")
    subprocess.check_call(["protoc", f"-I{src}", f"--python_out={d}", f"--grpc_python_out={d}",
                           "--plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin",
                           os.path.join(src, "inference.proto")])
    sys.path.insert(0, d)
    import inference_pb2
    import inference_pb2_grpc
    return inference_pb2, inference_pb2_grpc


def percentile(xs, q):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q / 100.0 * len(xs)))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("protocol", choices=["grpc", "rest"])
    ap.add_argument("--addr", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--input-name", default="input")
    ap.add_argument("--shape", default="1,3,224,224")
    ap.add_argument("--clients", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--warmup", type=float, default=1.0)
    ap.add_argument("--rate", type=float, default=0, help="offered requests/s (0: closed loop)")
    a = ap.parse_args()
    shape = [int(v) for v in a.shape.split(",")]
    x = np.random.RandomState(0).randn(*shape).astype(np.float32)
    raw = x.tobytes()
    lock = threading.Lock()
    ok, rej, err = [], [], []
    kinds = {}
    due = [0]

    def next_slot():
        """Closed loop: now. Open loop: wait for the next due time (None when past the end)."""
        if a.rate <= 0:
            return time.monotonic()
        with lock:
            k = due[0]
            due[0] += 1
        t = t_start - a.warmup + k / a.rate
        now = time.monotonic()
        if t > now:
            time.sleep(t - now)
        return time.monotonic()

    def note(kind):
        with lock:
            kinds[kind] = kinds.get(kind, 0) + 1
    t_start = time.monotonic() + a.warmup
    t_end = t_start + a.seconds

    if a.protocol == "grpc":
        pb, rpc = grpc_stubs()
        import grpc
        req = pb.ModelInferRequest(model_name=a.model, inputs=[pb.ModelInferRequest.InferInputTensor(
            name=a.input_name, datatype="FP32", shape=shape)], raw_input_contents=[raw])

        def client():
            ch = grpc.insecure_channel(a.addr, options=[("grpc.max_receive_message_length", 1 << 30),
                                                        ("grpc.max_send_message_length", 1 << 30)])
            stub = rpc.GRPCInferenceServiceStub(ch)
            while True:
                t0 = next_slot()
                if t0 >= t_end:
                    break
                try:
                    stub.ModelInfer(req, timeout=60)
                    bucket = ok
                except grpc.RpcError as e:
                    bucket = rej if e.code() == grpc.StatusCode.UNAVAILABLE else err
                    if bucket is err:
                        note(f"{e.code().name}: {e.details()}"[:120])
                t1 = time.monotonic()
                if t0 >= t_start:
                    with lock:
                        bucket.append(t1 - t0)
            ch.close()
    else:
        head = json.dumps({"inputs": [{"name": a.input_name, "shape": shape, "datatype": "FP32",
                                       "parameters": {"binary_data_size": len(raw)}}],
                           "binary_data_output": True}).encode()
        body = head + raw
        hdrs = {"Inference-Header-Content-Length": str(len(head)), "Content-Type": "application/octet-stream"}
        host, port = a.addr.rsplit(":", 1)

        def client():
            c = http.client.HTTPConnection(host, int(port), timeout=60)
            while True:
                t0 = next_slot()
                if t0 >= t_end:
                    break
                try:
                    c.request("POST", f"/v2/models/{a.model}/infer", body, hdrs)
                    r = c.getresponse()
                    text = r.read()
                    bucket = ok if r.status == 200 else rej if r.status == 503 else err
                    if bucket is err:
                        note(f"HTTP {r.status}: {text[:100]!r}")
                except Exception as e:
                    bucket = err
                    note(f"{type(e).__name__}: {e}"[:120])
                    c.close()
                    c = http.client.HTTPConnection(host, int(port), timeout=60)
                t1 = time.monotonic()
                if t0 >= t_start:
                    with lock:
                        bucket.append(t1 - t0)
            c.close()

    ts = [threading.Thread(target=client) for _ in range(a.clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    ms = lambda v: None if v is None else round(v * 1000, 3)
    print(json.dumps({"protocol": a.protocol, "clients": a.clients, "seconds": a.seconds,
                      "requests": len(ok) + len(rej) + len(err), "ok": len(ok), "rejected": len(rej),
                      "errors": len(err), "throughput_per_s": len(ok) / a.seconds,
                      "p50_ms": ms(percentile(ok, 50)), "p99_ms": ms(percentile(ok, 99)),
                      "rejected_p50_ms": ms(percentile(rej, 50)), "rejected_p99_ms": ms(percentile(rej, 99)),
                      "error_kinds": kinds}))


if __name__ == "__main__":
    main()
