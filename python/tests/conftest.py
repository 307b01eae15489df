"""Fixtures for the Python module's tests: a private compile cache, the tiny models, the zoo
models and ONNX Runtime's outputs for them (from onnxruntime-node, as the C++ model tests)."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import tiny_onnx  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("SYSTOLIC_BUILD_DIR", os.path.join(ROOT, "build"))
SYSTOLIC = os.path.join(BUILD, "systolic")
ORT_NODE = os.path.join(ROOT, "bench", "node_modules", "onnxruntime-node")


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory):
    """Neither the user's compile cache nor their tuned configurations are read or filled."""
    old = os.environ.get("SYSTOLIC_CACHE_DIR")
    os.environ["SYSTOLIC_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if old is None:
        os.environ.pop("SYSTOLIC_CACHE_DIR", None)
    else:
        os.environ["SYSTOLIC_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    """Paths of the tiny models (tiny_onnx.py) by name."""
    d = tmp_path_factory.mktemp("models")
    paths = {}
    for name, data in [("tiny", tiny_onnx.tiny_conv()), ("tiny_hw", tiny_onnx.tiny_conv(batch="N", hw=("H", "W"))),
                       ("two_io", tiny_onnx.two_io()), ("relu", tiny_onnx.relu()),
                       ("unsupported", tiny_onnx.unsupported())]:
        paths[name] = str(d / f"{name}.onnx")
        with open(paths[name], "wb") as f:
            f.write(data)
    return paths


@pytest.fixture(scope="session")
def zoo(tmp_path_factory):
    """`systolic zoo NAME` written once per run: zoo("resnet18") -> path."""
    d = tmp_path_factory.mktemp("zoo")
    made = {}

    def get(name):
        if name not in made:
            path = str(d / f"{name}.onnx")
            subprocess.run([SYSTOLIC, "zoo", name, "-o", path], check=True, capture_output=True)
            made[name] = path
        return made[name]

    return get


def ort_outputs(model, outdir, inputs):
    """ONNX Runtime's outputs (onnxruntime-node, bench/ort_run.js) for `inputs` {name: array}:
    {name: array}. Skips without onnxruntime-node unless SYSTOLIC_REQUIRE_ORT is set."""
    if not os.path.isdir(ORT_NODE) or shutil.which("node") is None:
        if os.environ.get("SYSTOLIC_REQUIRE_ORT"):
            pytest.fail("onnxruntime-node is not installed in bench/ (run scripts/setup.sh)")
        pytest.skip("onnxruntime-node is not installed in bench/")
    os.makedirs(outdir, exist_ok=True)
    args = []
    for name, a in inputs.items():
        p = os.path.join(outdir, f"{name}.given.npy")
        np.save(p, a)
        args.append(f"{name}={p}")
    r = subprocess.run(["node", os.path.join(ROOT, "bench", "ort_run.js"), model, outdir, *args],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    outs = {}
    for line in r.stdout.splitlines():
        name = line.split(":", 1)[0]
        outs[name] = np.load(os.path.join(outdir, f"{name}.npy"))
    return outs


def max_rel_error(got, want):
    """max |got - want| over max |want|, as the C++ model tests measure it."""
    return float(np.max(np.abs(got.astype(np.float64) - want)) / max(1e-6, float(np.max(np.abs(want)))))
