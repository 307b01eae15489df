#!/usr/bin/python3
"""Writes photo-like synthetic JPEGs (and optionally broken files) for pipeline tests and benchmarks.

    /usr/bin/python3 bench/make_images.py --count 1000 --out DIR [--seed N] [--corrupt K]

Images have ImageNet-typical sizes (500x375, 375x500, 500x333, 640x480, 400x400, 300x225, ...)
and hold a smooth colour field, shapes, texture and noise, so their JPEGs are about as large as
photos (~50-150 KB). The output depends only on --seed. --corrupt K adds K broken files:
truncated JPEGs, garbage named .jpg, empty .jpg files and .txt files.
"""
import argparse
import os
import sys
import time

import numpy as np
from PIL import Image, ImageDraw

# (width, height) and how often each occurs.
SIZES = [((500, 375), 30), ((375, 500), 15), ((500, 333), 12), ((333, 500), 6), ((640, 480), 10),
         ((480, 640), 4), ((400, 400), 6), ((300, 225), 5), ((500, 500), 5), ((800, 600), 4), ((1024, 683), 3)]


# Colours stay in [MARGIN, 255 - MARGIN] and noise in [-MARGIN, MARGIN], so adding noise as
# wrapping uint8 arithmetic never wraps: one cheap numpy add instead of a clip.
MARGIN = 40


class Texture:
    """Banks of noise (fine grain plus a coarser texture) at a few strengths, stored as uint8
    two's complement; images take windows of them, which is cheaper than drawing fresh noise and
    just as incompressible for JPEG."""

    def __init__(self, rng, size=1100, strengths=(0.8, 1.2, 1.6, 2.0)):
        fine = rng.normal(0.0, 1.0, (size, size, 3)).astype(np.float32)
        coarse = rng.normal(0.0, 1.0, (size // 4, size // 4, 3)).astype(np.float32)
        coarse = np.repeat(np.repeat(coarse, 4, axis=0), 4, axis=1)[:size, :size]
        noise = fine * 7 + coarse * 6
        self.banks = [np.clip(np.rint(noise * s), -MARGIN, MARGIN).astype(np.int8).view(np.uint8) for s in strengths]
        self.size = size

    def window(self, rng, w, h):
        bank = self.banks[int(rng.integers(0, len(self.banks)))]
        if w > self.size or h > self.size:  # larger than the bank: repeat it
            bank = np.tile(bank, (-(-h // self.size), -(-w // self.size), 1))
        x = int(rng.integers(0, bank.shape[1] - w + 1))
        y = int(rng.integers(0, bank.shape[0] - h + 1))
        return bank[y:y + h, x:x + w]


def random_colour(rng):
    return tuple(int(v) for v in rng.integers(MARGIN, 256 - MARGIN, 3))


def smooth_curve(rng, n):
    """n x 3 uint8 values in [0, (255 - 2 * MARGIN) // 2] varying smoothly along n."""
    knots = int(rng.integers(2, 6))
    xs = np.linspace(0, n - 1, knots)
    top = (255 - 2 * MARGIN) // 2
    return np.stack([np.interp(np.arange(n), xs, rng.integers(0, top + 1, knots)) for _ in range(3)],
                    axis=1).astype(np.uint8)


def synth_image(rng, texture, w, h):
    """One photo-like RGB image as a PIL Image: a smooth colour field, shapes, texture."""
    rows, cols = smooth_curve(rng, h) + np.uint8(MARGIN), smooth_curve(rng, w)
    # Built per channel: numpy broadcasts over a last axis of 3 slowly.
    img = Image.merge("RGB", [Image.fromarray(rows[:, c, None] + cols[None, :, c]) for c in range(3)])
    draw = ImageDraw.Draw(img)
    for _ in range(int(rng.integers(4, 14))):
        x0, x1 = sorted(int(v) for v in rng.integers(-w // 4, w + w // 4, 2))
        y0, y1 = sorted(int(v) for v in rng.integers(-h // 4, h + h // 4, 2))
        kind = int(rng.integers(0, 4))
        if kind == 0:
            draw.ellipse((x0, y0, x1, y1), fill=random_colour(rng))
        elif kind == 1:
            draw.rectangle((x0, y0, x1, y1), fill=random_colour(rng))
        elif kind == 2:
            pts = [(int(rng.integers(0, w)), int(rng.integers(0, h))) for _ in range(int(rng.integers(3, 7)))]
            draw.polygon(pts, fill=random_colour(rng))
        else:
            draw.line((x0, y0, x1, y1), fill=random_colour(rng), width=int(rng.integers(1, 12)))
    pixels = np.array(img)
    pixels += texture.window(rng, w, h)  # wraps as signed addition; never overflows (MARGIN)
    return Image.fromarray(pixels)


def pick_size(rng):
    sizes, weights = zip(*SIZES)
    p = np.array(weights, dtype=np.float64)
    return sizes[int(rng.choice(len(sizes), p=p / p.sum()))]


def write_corrupt(out, k, rng, good_jpeg):
    kind = ("truncated", "garbage", "empty", "text")[k % 4]
    if kind == "truncated":
        data = good_jpeg[: len(good_jpeg) * int(rng.integers(30, 80)) // 100]
        name = f"corrupt_{k:04d}_truncated.jpg"
    elif kind == "garbage":
        data = rng.integers(0, 256, int(rng.integers(100, 5000)), dtype=np.uint8).tobytes()
        name = f"corrupt_{k:04d}_garbage.jpg"
    elif kind == "empty":
        data = b""
        name = f"corrupt_{k:04d}_empty.jpg"
    else:
        data = b"this is a text file, not an image\n"
        name = f"corrupt_{k:04d}_notes.txt"
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=1000, help="number of images")
    ap.add_argument("--out", required=True, help="output directory (created)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--corrupt", type=int, default=0, help="also write K broken files")
    ap.add_argument("--quality", type=int, default=90, help="JPEG quality")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    start = time.time()
    texture = Texture(np.random.default_rng([args.seed, 1 << 30]))
    total = 0
    last = None
    for i in range(args.count):
        rng = np.random.default_rng([args.seed, i])
        w, h = pick_size(rng)
        path = os.path.join(args.out, f"img_{i:05d}.jpg")
        synth_image(rng, texture, w, h).save(path, quality=args.quality)
        total += os.path.getsize(path)
        last = path
    if args.corrupt:
        if last is None:
            sys.exit("make_images.py: --corrupt needs at least one image (--count >= 1)")
        good = open(last, "rb").read()
        for k in range(args.corrupt):
            write_corrupt(args.out, k, np.random.default_rng([args.seed, 1 << 31, k]), good)
    print(f"wrote {args.count} images ({total / max(args.count, 1) / 1024:.0f} KB on average)"
          f"{f' and {args.corrupt} broken files' if args.corrupt else ''} to {args.out} in {time.time() - start:.1f} s")


if __name__ == "__main__":
    main()
