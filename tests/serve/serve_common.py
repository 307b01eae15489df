"""What the serve client tests share: the environment they read, BYTES tensors on the wire,
Prometheus samples, row comparison and test images."""
import glob
import io
import os
import time
import struct
import unittest
import urllib.request
import zlib

import numpy as np

NP_OF = {"BOOL": np.bool_, "UINT8": np.uint8, "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64,
         "INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64, "FP16": np.float16,
         "FP32": np.float32, "FP64": np.float64}


def need(*names):
    missing = [n for n in names if not os.environ.get(n)]
    return unittest.skipIf(missing, "not set: " + ", ".join(missing))


def bytes_tensor(items):
    """BYTES elements on the wire: a 4-byte little-endian length before each."""
    return b"".join(len(b).to_bytes(4, "little") + b for b in items)


def parse_bytes_tensor(raw):
    out, at = [], 0
    while at < len(raw):
        n = int.from_bytes(raw[at:at + 4], "little")
        out.append(raw[at + 4:at + 4 + n])
        at += 4 + n
    return out


def metric(http_addr, name, model, **labels):
    """One sample of the server's Prometheus text at http_addr, 0 when absent."""
    with urllib.request.urlopen(f"http://{http_addr}/metrics", timeout=10) as r:
        text = r.read().decode()
    want = {"model": model, **labels}
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        body, value = line.rsplit(" ", 1)
        got = dict(kv.split("=", 1) for kv in body[len(name) + 1:-1].split(","))
        if all(got.get(k) == f'"{v}"' for k, v in want.items()):
            return float(value)
    return 0.0


def wait_until_queued(http_addr, model, n, timeout=60):
    """Until at least n requests of the model are pending (queued or computing)."""
    deadline = time.time() + timeout
    while metric(http_addr, "nv_inference_pending_request_count", model) < n and time.time() < deadline:
        time.sleep(0.05)


def cancelled_since(http_addr, model, before, timeout=120):
    """CANCELED failures counted since `before`, once at least one is and nothing is pending:
    a dropped request is counted when the batcher reaches it."""
    deadline = time.time() + timeout
    while True:
        cancelled = metric(http_addr, "nv_inference_request_failure", model, reason="CANCELED") - before
        done = cancelled >= 1 and metric(http_addr, "nv_inference_pending_request_count", model) == 0
        if done or time.time() >= deadline:
            return cancelled
        time.sleep(0.1)


def assert_rows_match(got, want, rtol=1e-4):
    """Every batch row of `got` against the one expected row (other batch sizes run other plans)."""
    scale = max(1.0, float(np.abs(want).max()))
    for i in range(got.shape[0]):
        np.testing.assert_allclose(got[i].reshape(-1), want, rtol=rtol, atol=1e-4 * scale, err_msg=f"batch row {i}")


def png(rgb):
    """A PNG file of an RGB uint8 image, written with zlib (no imaging library needed)."""
    h, w, _ = rgb.shape

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + rgb[y].tobytes() for y in range(h))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def image_files(images_dir=None, with_png=True):
    """Distinct encoded images: the JPEGs in images_dir, else JPEGs drawn with PIL (when
    installed), plus PNGs written here."""
    if images_dir:
        files = sorted(glob.glob(os.path.join(images_dir, "*.jpg")) + glob.glob(os.path.join(images_dir, "*.jpeg")))
        if files:
            out = []
            for f in files[:3]:
                with open(f, "rb") as fh:
                    out.append(fh.read())
            return out
    rng = np.random.default_rng(3)
    yy, xx = np.mgrid[0:240, 0:320]
    smooth = np.stack([xx * 255 // 319, yy * 255 // 239, (xx + yy) * 255 // 558], -1).astype(np.uint8)
    noisy = rng.integers(0, 256, [300, 200, 3], dtype=np.uint8)
    out = []
    try:
        from PIL import Image
        for rgb in (smooth, noisy):
            buf = io.BytesIO()
            Image.fromarray(rgb).save(buf, format="JPEG", quality=90)
            out.append(buf.getvalue())
    except ImportError:
        pass
    return out + ([png(smooth), png(noisy)] if with_png else [])
