#!/usr/bin/python3
"""What the Python module adds per call: InferenceSession.run, Model.run and the bare native
run against the C++ Session::run on the same model and session, median microseconds per call.
A tiny model (one Relu) by default, so the model's own time does not hide the overhead.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py [--model M.onnx] [--iters N] [--json]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "tests"))
import systolic  # noqa: E402


def per_call_us(fn, iters):
    for _ in range(min(iters, 200)):
        fn()
    us = []
    for _ in range(iters):
        t0 = time.perf_counter_ns()
        fn()
        us.append((time.perf_counter_ns() - t0) / 1000)
    return statistics.median(us)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", help=".onnx to measure on (default: a one-Relu float[1,16] model)")
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    tmp = tempfile.TemporaryDirectory()
    os.environ.setdefault("SYSTOLIC_CACHE_DIR", os.path.join(tmp.name, "cache"))
    path = args.model
    if path is None:
        import tiny_onnx
        path = os.path.join(tmp.name, "relu.onnx")
        with open(path, "wb") as f:
            f.write(tiny_onnx.relu())

    opts = systolic.SessionOptions()
    opts.intra_op_num_threads = args.threads
    sess = systolic.InferenceSession(path, opts)
    model = systolic.compile(path, batch=1, threads=args.threads, tuned=False)
    rng = np.random.default_rng(0)
    feed = {name: (rng.standard_normal(shape).astype(dtype) if dtype.kind == "f" else np.zeros(shape, dtype))
            for name, dtype, shape in model.inputs}

    native = statistics.median(model._m._time_native_run(args.iters))
    r = {
        "model": path if args.model else "relu float[1,16]",
        "iters": args.iters,
        "session_run_us": native,
        "native_run_us": per_call_us(lambda: model._m.run(feed), args.iters),
        "model_run_us": per_call_us(lambda: model.run(feed), args.iters),
        "inference_session_run_us": per_call_us(lambda: sess.run(None, feed), args.iters),
    }
    r["inference_session_overhead_us"] = r["inference_session_run_us"] - native
    r["model_run_overhead_us"] = r["model_run_us"] - native
    if args.json:
        print(json.dumps(r))
        return
    print(f"model                      {r['model']}, {args.iters} calls each, median per call")
    print(f"Session::run (C++)         {native:8.2f} us")
    print(f"_native Model.run          {r['native_run_us']:8.2f} us  (+{r['native_run_us'] - native:.2f})")
    print(f"systolic Model.run         {r['model_run_us']:8.2f} us  (+{r['model_run_overhead_us']:.2f})")
    print(f"InferenceSession.run       {r['inference_session_run_us']:8.2f} us  (+{r['inference_session_overhead_us']:.2f})")


if __name__ == "__main__":
    main()
