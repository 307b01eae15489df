#!/usr/bin/python3
"""The straightforward peer pipeline: for each image, PIL + torchvision preprocessing
(Resize(256), CenterCrop(224), ToTensor, Normalize), then ONNX Runtime (bench/ort_serve.js)
inference, one image after the other. Prints one JSON line: images/s and where time went.

Usage: bench/pil_ort_classify.py MODEL.onnx --images DIR [--threads 2] [--limit N]
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import time

import numpy as np
from PIL import Image
from torchvision import transforms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--images", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0)
    a = ap.parse_args()
    files = sorted(os.path.join(r, f) for r, _, fs in os.walk(a.images) for f in fs if not f.startswith("."))
    if a.limit:
        files = files[: a.limit]
    here = os.path.dirname(os.path.abspath(__file__))
    server = subprocess.Popen(["node", os.path.join(here, "ort_serve.js"), a.model, "--threads", str(a.threads)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    tf = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor(),
                             transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])

    def infer(x):
        body = np.ascontiguousarray(x, dtype=np.float32).tobytes()
        server.stdin.write(struct.pack("<I", len(body)) + body)
        server.stdin.flush()
        reply = server.stdout.read(4)
        if len(reply) != 4:
            sys.exit("pil_ort_classify: the ONNX Runtime server stopped")
        return struct.unpack("<i", reply)[0]

    infer(np.zeros((1, 3, 224, 224), np.float32))  # warm-up: session start, first run
    pre_s = infer_s = 0.0
    done = failed = 0
    t0 = time.perf_counter()
    for f in files:
        a0 = time.perf_counter()
        try:
            with Image.open(f) as im:
                x = tf(im.convert("RGB")).unsqueeze(0).numpy()
        except Exception:  # a broken file is skipped, as systolic classify does
            failed += 1
            continue
        a1 = time.perf_counter()
        infer(x)
        a2 = time.perf_counter()
        pre_s += a1 - a0
        infer_s += a2 - a1
        done += 1
    wall = time.perf_counter() - t0
    server.stdin.close()
    server.wait()
    print(json.dumps({"engine": "pil+onnxruntime", "images": done, "failed": failed, "wall_s": round(wall, 3),
                      "throughput_per_s": round(done / wall, 3) if wall > 0 else 0,
                      "preprocess_ms_per_image": round(1e3 * pre_s / max(done, 1), 3),
                      "infer_ms_per_image": round(1e3 * infer_s / max(done, 1), 3)}))


if __name__ == "__main__":
    main()
