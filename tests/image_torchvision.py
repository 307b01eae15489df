#!/usr/bin/python3
"""systolic's image preprocessing against torchvision's on PIL images.

Writes JPEGs and PNGs of various sizes, aspect ratios and modes (upscaled ones included), then for
each compares `systolic preprocess IMAGE` (decode + Resize(256) + CenterCrop(224)) with
torchvision's Resize(256) + CenterCrop(224) on Image.open(IMAGE).convert("RGB"), and the decoded
image alone (`--decode-only`) with PIL's. Fails when the mean absolute difference of the crop
exceeds 1/255 per pixel (one level of uint8) on any image.
"""
import argparse
import os
import subprocess
import sys

import numpy as np
from PIL import Image
import torchvision.transforms as T

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from make_images import Texture, synth_image  # noqa: E402


def cases(texture):
    """(file name, PIL image, save options)."""
    rng = np.random.default_rng(7)

    def photo(w, h):
        return synth_image(rng, texture, w, h)

    out = []
    for w, h in [(500, 375), (375, 500), (500, 333), (640, 480), (400, 400), (1024, 683), (2000, 150),
                 (256, 257), (300, 391), (256, 256), (300, 225), (200, 150), (64, 48), (17, 9), (1, 1)]:
        out.append((f"rgb_{w}x{h}.jpg", photo(w, h), {"quality": 90}))
    out.append(("progressive_500x375.jpg", photo(500, 375), {"quality": 85, "progressive": True}))
    out.append(("subsampling444_375x500.jpg", photo(375, 500), {"quality": 95, "subsampling": 0}))
    out.append(("gray_500x375.jpg", photo(500, 375).convert("L"), {"quality": 90}))
    out.append(("cmyk_400x300.jpg", photo(400, 300).convert("CMYK"), {"quality": 90}))
    out.append(("rgb_333x500.png", photo(333, 500), {}))
    out.append(("rgb_100x80.png", photo(100, 80), {}))
    rgba = photo(400, 300).convert("RGBA")
    rgba.putalpha(Image.fromarray(rng.integers(0, 256, (300, 400), dtype=np.uint8)))
    out.append(("rgba_400x300.png", rgba, {}))
    out.append(("gray_320x240.png", photo(320, 240).convert("L"), {}))
    out.append(("gray_alpha_200x300.png", photo(200, 300).convert("LA"), {}))
    out.append(("palette_500x375.png", photo(500, 375).quantize(colors=200), {}))
    out.append(("bilevel_300x300.png", photo(300, 300).convert("1"), {}))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--systolic", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    tf = T.Compose([T.Resize(256), T.CenterCrop(224)])
    failed = 0
    worst_mean = worst_max = 0
    print(f"{'image':30s} {'mode':5s} {'decode max':>10s} {'crop mean':>10s} {'crop max':>9s}")
    for name, img, opts in cases(Texture(np.random.default_rng(11))):
        path = os.path.join(args.out, name)
        img.save(path, **opts)
        pil = Image.open(path)
        mode = pil.mode
        rgb = pil.convert("RGB")
        want = np.asarray(tf(rgb)).astype(np.int32)
        npy, dec = path + ".npy", path + ".decoded.npy"
        for extra, dst in (([], npy), (["--decode-only"], dec)):
            r = subprocess.run([args.systolic, "preprocess", path, "-o", dst] + extra, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL {name}: systolic preprocess exited {r.returncode}: {r.stderr.strip()}")
                failed += 1
                break
        else:
            got, decoded = np.load(npy).astype(np.int32), np.load(dec).astype(np.int32)
            ref_decoded = np.asarray(rgb).astype(np.int32)
            if got.shape != want.shape or decoded.shape != ref_decoded.shape:
                print(f"FAIL {name}: shapes {got.shape} {decoded.shape}, expected {want.shape} {ref_decoded.shape}")
                failed += 1
                continue
            diff = np.abs(got - want)
            dmax = int(np.abs(decoded - ref_decoded).max())
            ok = diff.mean() <= 1.0
            worst_mean, worst_max = max(worst_mean, diff.mean()), max(worst_max, int(diff.max()))
            print(f"{name:30s} {mode:5s} {dmax:10d} {diff.mean():10.4f} {int(diff.max()):9d}{'' if ok else '  FAIL'}")
            failed += not ok
    print(f"worst mean absolute difference {worst_mean:.4f} levels (limit 1 = 1/255), worst pixel {worst_max} levels")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
