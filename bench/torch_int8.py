#!/usr/bin/python3
"""PyTorch's own int8 as a reference point: torchvision's ResNet-50 (random weights, batch norms
set from random batches) quantized by FX graph mode (fbgemm: oneDNN/FBGEMM int8 kernels), timed
in fp32 and int8 at the given batch sizes, interleaved rounds, medians.

usage: bench/torch_int8.py [--model resnet50] [--batches 1 16] [--threads 2] [--rounds 3] [--iters 10]
Prints one JSON line per (batch, precision): p50_ms, throughput_per_s.
"""
import argparse, json, statistics, time

import torch
import torchvision.models as models
from torch.ao.quantization import get_default_qconfig_mapping
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

ap = argparse.ArgumentParser()
ap.add_argument("--model", default="resnet50")
ap.add_argument("--batches", type=int, nargs="+", default=[1, 16])
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--rounds", type=int, default=3)
ap.add_argument("--iters", type=int, default=10)
a = ap.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(0)
fp32 = getattr(models, a.model)()
fp32.train()
with torch.no_grad():
    for _ in range(3):
        fp32(torch.randn(8, 3, 224, 224))
fp32.eval()
x = torch.randn(1, 3, 224, 224)
prepared = prepare_fx(fp32, get_default_qconfig_mapping("fbgemm"), (x,))
with torch.no_grad():
    for _ in range(4):
        prepared(torch.randn(2, 3, 224, 224))
int8 = convert_fx(prepared)


def p50(model, batch):
    xb = torch.randn(batch, 3, 224, 224)
    with torch.no_grad():
        model(xb)  # warm-up
        times = []
        for _ in range(a.iters):
            t = time.perf_counter()
            model(xb)
            times.append(time.perf_counter() - t)
    return statistics.median(times)


for b in a.batches:
    runs = {"fp32": [], "int8": []}
    for _ in range(a.rounds):
        for name, m in (("fp32", fp32), ("int8", int8)):
            runs[name].append(p50(m, b))
    for name, ts in runs.items():
        s = statistics.median(ts)
        print(json.dumps({"engine": "pytorch", "model": a.model, "precision": name, "batch": b, "threads": a.threads,
                          "p50_ms": round(s * 1e3, 2), "throughput_per_s": round(b / s, 1)}))
