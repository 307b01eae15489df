#!/usr/bin/python3
"""Decode and Resize(256) + CenterCrop(224) time: systolic next to PIL/torchvision, same images.

    /usr/bin/python3 bench/image_speed.py [--systolic build/systolic] [--repeat 50] [--rounds 5] IMAGE...

Prints per image the medians of both and their ratio (PIL / systolic; > 1: systolic is faster).
The two alternate in rounds of --repeat runs and the best round's median counts, so a busy
machine slows both alike.
Without IMAGE arguments it writes a 500x375 and a 375x500 photo-like JPEG with make_images.py.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
from PIL import Image
import torchvision.transforms as T

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_images import Texture, synth_image  # noqa: E402


def pil_times(path, repeat):
    tf = T.Compose([T.Resize(256), T.CenterCrop(224)])
    dec, rc = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        img = Image.open(path)
        img.load()  # decoding only: torchvision's loader adds a convert("RGB") copy on top
        if img.mode != "RGB":
            img = img.convert("RGB")
        t1 = time.perf_counter()
        tf(img)
        t2 = time.perf_counter()
        dec.append(t1 - t0)
        rc.append(t2 - t1)
    return np.median(dec) * 1e3, np.median(rc) * 1e3


def systolic_times(binary, path, repeat):
    r = subprocess.run([binary, "preprocess", path, "--repeat", str(repeat)], capture_output=True, text=True,
                       check=True)
    m = re.search(r"decode ([\d.]+) ms, resize\+crop ([\d.]+) ms", r.stderr)
    return float(m.group(1)), float(m.group(2))


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systolic", default=os.path.join(root, "build", "systolic"))
    ap.add_argument("--repeat", type=int, default=50, help="runs per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("images", nargs="*")
    args = ap.parse_args()
    images = args.images
    if not images:
        tmp = tempfile.mkdtemp(prefix="image_speed_")
        rng = np.random.default_rng(0)
        texture = Texture(rng)
        for w, h in ((500, 375), (375, 500)):
            p = os.path.join(tmp, f"photo_{w}x{h}.jpg")
            synth_image(rng, texture, w, h).save(p, quality=90)
            images.append(p)
    print(f"{'image':24s} {'size':>9s} {'KB':>5s} | {'decode ms: PIL':>14s} {'systolic':>8s} {'ratio':>5s} |"
          f" {'resize+crop ms: PIL':>19s} {'systolic':>8s} {'ratio':>5s}")
    for p in images:
        w, h = Image.open(p).size
        pil, sys_ = [], []
        for _ in range(args.rounds):
            pil.append(pil_times(p, args.repeat))
            sys_.append(systolic_times(args.systolic, p, args.repeat))
        pd, pr = min(t[0] for t in pil), min(t[1] for t in pil)
        sd, sr = min(t[0] for t in sys_), min(t[1] for t in sys_)
        print(f"{os.path.basename(p)[:24]:24s} {f'{w}x{h}':>9s} {os.path.getsize(p) / 1024:5.0f} | {pd:14.3f} {sd:8.3f}"
              f" {pd / sd:5.2f} | {pr:19.3f} {sr:8.3f} {pr / sr:5.2f}")


if __name__ == "__main__":
    main()
