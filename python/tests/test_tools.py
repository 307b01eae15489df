"""The CLI's computing commands as functions: simulate and classify give what the CLI's --json
and JSON Lines give, quantize writes the plan the CLI writes (up to its compile timings)."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import systolic
from conftest import ROOT, SYSTOLIC


def cli_json(*args):
    r = subprocess.run([SYSTOLIC, *args], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines() if line.strip()]


@pytest.mark.parametrize("kwargs,flags", [
    ({"target": "tpu-v4"}, ["--target", "tpu-v4"]),
    ({"compare": ["tpu-v4", "tpu-v5e"], "batch": [1, 8]}, ["--compare", "tpu-v4,tpu-v5e", "--batch", "1,8"]),
    ({"what_if": "array=256x256,sram=64MiB"}, ["--what-if", "array=256x256,sram=64MiB"]),
    ({"sweep": True, "target": "tpu-v5e"}, ["--sweep-batch", "--target", "tpu-v5e"]),
])
def test_simulate_matches_cli_json(zoo, kwargs, flags):
    path = zoo("resnet18")
    assert systolic.simulate(path, **kwargs) == cli_json("simulate", path, "--json", *flags)[0]


def test_simulate_model_object_and_errors(models):
    m = systolic.compile(models["tiny"])
    r = systolic.simulate(m, target="tpu-v4")
    assert r["plan_precision"] == "fp32" and r["layers"]
    with pytest.raises(systolic.InvalidArgument):
        systolic.simulate(m, target="no-such-target")
    with pytest.raises(systolic.InvalidArgument):
        systolic.simulate(m, what_if="frobs=3")
    with pytest.raises(systolic.InvalidArgument, match="check needs"):
        systolic.simulate(m, target="tpu-v4", check=True)


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    pytest.importorskip("PIL")
    d = tmp_path_factory.mktemp("images")
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_images.py"), "--count", "6", "--corrupt", "2",
                    "--out", str(d)], check=True, capture_output=True)
    return str(d)


def test_classify_matches_cli(zoo, images, tmp_path):
    path = zoo("mobilenet_v2")
    results = systolic.classify(images, path, top=3, batch=2, labels=[f"class {k}" for k in range(1000)])
    got = sorted(results, key=lambda r: r["path"])
    want = cli_json("classify", path, "--images", images, "--top", "3", "--batch", "2", "--format", "jsonl",
                    "--quiet", "--labels", str(_labels(tmp_path)))
    want = sorted(want, key=lambda r: r["path"])
    assert len(got) == len(want) == 8
    for g, w in zip(got, want):
        # Probabilities to float rounding: numpy's exp is not the C library's.
        for a, b in zip(g.get("top", []), w.get("top", [])):
            assert a.pop("prob") == pytest.approx(b.pop("prob"), rel=1e-6)
        assert g == w
    s = results.summary
    assert (s["images"], s["failed"], s["files"], s["batch"]) == (6, 2, 8, 2)
    assert {st["name"] for st in s["stages"]} >= {"load", "infer"}


def _labels(tmp_path):
    p = tmp_path / "labels.txt"
    p.write_text("".join(f"class {k}\n" for k in range(1000)))
    return p


def test_classify_errors(models, zoo, images, tmp_path):
    with pytest.raises(systolic.InvalidArgument, match="takes tensors, not images"):
        systolic.classify(images, systolic.compile(models["tiny"]))
    with pytest.raises(systolic.InvalidArgument, match="no such file"):
        systolic.classify(str(tmp_path / "none"), zoo("mobilenet_v2"))
    with pytest.raises(systolic.InvalidArgument, match="labels"):
        systolic.classify(images, zoo("mobilenet_v2"), labels=["a", "b"])
    # Abandoning the results part way stops the pipeline cleanly.
    it = systolic.classify(images, zoo("mobilenet_v2"), batch=1)
    next(it)
    del it


def test_quantize_plan_like_cli(models, tmp_path):
    ours = tmp_path / "ours.plan"
    m = systolic.quantize(models["tiny"], "random:4", output=ours)
    assert m.precision == "int8"
    theirs = tmp_path / "cli.plan"
    subprocess.run([SYSTOLIC, "quantize", models["tiny"], "--calibration", "random:4", "-o", str(theirs)], check=True,
                   capture_output=True)
    loaded, cli = systolic.load(ours), systolic.load(theirs)
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32), dtype=np.float32)
    np.testing.assert_array_equal(loaded.run(x)["y"], cli.run(x)["y"])
    assert os.path.getsize(ours) == os.path.getsize(theirs)


def test_quantize_qdq_like_cli(models, tmp_path):
    ours, theirs = tmp_path / "ours.onnx", tmp_path / "cli.onnx"
    m = systolic.quantize(models["tiny"], "random:4", method="entropy", output=ours)
    assert m.precision == "int8"
    subprocess.run([SYSTOLIC, "quantize", models["tiny"], "--calibration", "random:4", "--method", "entropy", "-o",
                    str(theirs)], check=True, capture_output=True)
    assert open(ours, "rb").read() == open(theirs, "rb").read()
    x = np.random.default_rng(0).standard_normal((1, 3, 32, 32), dtype=np.float32)
    got = systolic.InferenceSession(str(ours)).run(None, {"input": x})[0]
    want = systolic.InferenceSession(str(theirs)).run(None, {"input": x})[0]
    np.testing.assert_array_equal(got, want)


def test_quantize_errors(models, tmp_path):
    with pytest.raises(systolic.InvalidArgument, match="minmax, percentile, entropy"):
        systolic.quantize(models["tiny"], "random:2", method="median", output=tmp_path / "q.onnx")
    with pytest.raises(systolic.InvalidArgument, match="write a .plan"):
        systolic.quantize(models["tiny"], "random:2", output=tmp_path / "q.bin")
    with pytest.raises(systolic.InvalidArgument, match="minmax, percentile, entropy"):
        systolic.quantize(models["tiny"], "random:2", method="median")
    qdq = tmp_path / "qdq.onnx"
    subprocess.run([SYSTOLIC, "quantize", models["tiny"], "--calibration", "random:2", "-o", str(qdq)], check=True,
                   capture_output=True)
    with pytest.raises(systolic.InvalidArgument, match="already quantized"):
        systolic.quantize(str(qdq), "random:2")


def test_bench_matches_cli_keys(models):
    path = models["tiny"]
    want = cli_json("bench", path, "--iters", "3", "--warmup", "1", "--batch", "2", "--threads", "1", "--json")[0]
    got = systolic.bench(path, batch=2, threads=1, instances=1, iters=3, warmup=1)
    assert set(got) == set(want)
    for k in ("model", "batch", "precision", "threads", "instances", "isa", "iters", "peak_name", "gflop_per_run"):
        assert got[k] == want[k], k
    assert 0 < got["p50_ms"] <= got["p90_ms"] <= got["p99_ms"]
    assert got["throughput_per_s"] > 0 and got["gflops"] > 0 and got["peak_rss_bytes"] > 0
    two = systolic.bench(systolic.compile(path, batch=1), instances=2, threads=1, iters=2, warmup=0, per_layer=True)
    assert two["instances"] == 2 and two["threads"] == 1 and two["layers"]
    with pytest.raises(systolic.InvalidArgument):
        systolic.bench(path, instances=0)


def test_tune_matches_cli_keys(models):
    path = models["tiny"]
    r = subprocess.run([SYSTOLIC, "tune", path, "--batches", "1,2", "--threads", "2", "--seconds-per-point", "0",
                        "--no-svg", "--no-save", "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    want = json.loads(r.stdout)  # one object, indented
    got = systolic.tune(path, batches=[1, 2], threads=2, seconds_per_point=0, save=False)
    assert set(got) == set(want)
    assert set(got["table"][0]) == set(want["table"][0]) and set(got["recommended"]) == set(want["recommended"])
    assert [(r["batch"], r["instances"], r["threads"]) for r in got["table"]] == \
        [(r["batch"], r["instances"], r["threads"]) for r in want["table"]]
    for k in ("model", "precision", "isa", "host", "threads", "seconds_per_point", "budgets", "saved", "svg"):
        assert got[k] == want[k], k
    limited = systolic.tune(path, latency_budget=1e-9, memory_budget="64M", batches=[1], threads=1,
                            seconds_per_point=0, save=False)
    assert limited["recommended"] is None and limited["error"] and limited["budgets"]["memory_bytes"] == 64 << 20
    with pytest.raises(systolic.InvalidArgument):
        systolic.tune(path, memory_budget="lots")


def test_quantize_binds_symbolic_dims(models, tmp_path):
    with pytest.raises(systolic.InvalidArgument, match="--shape"):
        systolic.quantize(models["tiny_hw"], "random:2")
    m = systolic.quantize(models["tiny_hw"], "random:2", shape="1x3x20x12", output=tmp_path / "q.plan")
    assert m.precision == "int8" and m.inputs[0].shape == (1, 3, 20, 12)
    q = systolic.quantize(models["tiny_hw"], "random:2", shape={"input": (1, 3, 16, 8)}, output=tmp_path / "q.onnx")
    assert q.inputs[0].shape == (1, 3, 16, 8)  # the QDQ file takes the bound sizes
