"""systolic's own API: compile with options, run (dict in, dict out), run_async, save and load,
specs and the load report, image input, int8, info."""
import concurrent.futures

import numpy as np
import pytest

import systolic
from tiny_onnx import reference_tiny_conv


def test_compile_run_specs(models):
    m = systolic.compile(models["tiny"], batch=2, threads=1)
    assert isinstance(m, systolic.Model)
    assert m.batch == 2 and m.threads == 1 and m.precision == "fp32"
    assert m.inputs == [systolic.TensorSpec("input", np.dtype("float32"), (2, 3, 32, 32))]
    assert m.outputs[0].name == "y" and m.outputs[0].shape == (2, 16, 1, 1)
    assert m.report["compiled"] and not m.report["cache_hit"]
    assert m.flops > 2 * 16 * 27 * 32 * 32 * 2 * 0.9
    x = np.random.default_rng(0).standard_normal((2, 3, 32, 32), dtype=np.float32)
    out = m.run({"input": x})
    assert list(out) == ["y"]
    np.testing.assert_allclose(out["y"], reference_tiny_conv(x), rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(m.run(x)["y"], out["y"])  # one input: the bare array
    again = systolic.compile(models["tiny"], batch=2, threads=1)
    assert again.report["cache_hit"]


def test_outputs_are_fresh_owned_arrays(models):
    m = systolic.compile(models["tiny"])
    x = np.ones((1, 3, 32, 32), np.float32)
    a, b = m.run(x)["y"], m.run(x)["y"]
    assert a.flags.owndata and a.flags.writeable and a.flags.c_contiguous
    a[:] = 0  # the caller's to keep and change
    assert b.any()


def test_non_contiguous_and_list_inputs(models):
    m = systolic.compile(models["tiny"])
    x = np.random.default_rng(2).standard_normal((1, 3, 32, 64), dtype=np.float32)
    strided = x[:, :, :, ::2]
    assert not strided.flags.c_contiguous
    np.testing.assert_array_equal(m.run(strided)["y"], m.run(np.ascontiguousarray(strided))["y"])
    two = systolic.compile(models["two_io"])
    out = two.run({"a": [[1, 2, 3, 4]], "b": [[2, 2, 2, 2]]})
    np.testing.assert_array_equal(out["sum"], [[3, 4, 5, 6]])


def test_run_async(models):
    m = systolic.compile(models["tiny"], batch=1)
    xs = [np.random.default_rng(k).standard_normal((1, 3, 32, 32), dtype=np.float32) for k in range(6)]
    futures = [m.run_async({"input": x}) for x in xs]
    assert all(isinstance(f, concurrent.futures.Future) for f in futures)
    for x, f in zip(xs, futures):
        np.testing.assert_array_equal(f.result(timeout=60)["y"], m.run(x)["y"])
    bad = m.run_async({"input": np.zeros((1, 3, 32, 32), np.float64)})
    with pytest.raises(systolic.InvalidArgument):
        bad.result(timeout=60)


def test_save_and_load(models, tmp_path):
    m = systolic.compile(models["tiny"], batch=3)
    plan = tmp_path / "tiny.plan"
    m.save(plan)
    loaded = systolic.load(plan, threads=1)
    assert loaded.batch == 3 and not loaded.report["compiled"]
    x = np.random.default_rng(5).standard_normal((3, 3, 32, 32), dtype=np.float32)
    np.testing.assert_array_equal(loaded.run(x)["y"], m.run(x)["y"])
    with pytest.raises(systolic.Fail):
        m.save(tmp_path / "no" / "such" / "dir" / "x.plan")


def test_shape_binding(models):
    m = systolic.compile(models["tiny_hw"], shape={"input": "2x3x20x12"})
    assert m.inputs[0].shape == (2, 3, 20, 12)
    m = systolic.compile(models["tiny_hw"], shape=(1, 3, 8, 8))
    assert m.inputs[0].shape == (1, 3, 8, 8)
    with pytest.raises(systolic.InvalidArgument):
        systolic.compile(models["tiny_hw"])  # H and W are unbound


def test_image_input(zoo):
    m = systolic.compile(zoo("mobilenet_v2"), preprocess="imagenet", batch=1)
    assert m.image_input
    assert m.inputs[0].dtype == np.uint8 and m.inputs[0].shape == (1, 224, 224, 3)
    assert m.image["resize"] == 256 and m.image["crop"] == (224, 224)
    img = np.random.default_rng(0).integers(0, 256, (1, 224, 224, 3), dtype=np.uint8)
    assert m.run(img)["logits"].shape == (1, 1000)


def test_int8(models):
    m = systolic.compile(models["tiny"], precision="int8", calibration="random:4")
    assert m.precision == "int8"
    x = np.random.default_rng(4).standard_normal((1, 3, 32, 32), dtype=np.float32)
    want = reference_tiny_conv(x)
    got = m.run(x)["y"]
    assert np.max(np.abs(got - want)) < 0.05 * np.max(np.abs(want)) + 1e-3


def test_info():
    text = systolic.info()
    assert text.startswith("cpu ") and "fp32 peak" in text and "fp32 conv" in text
    assert systolic.__version__


SUITE = "/usr/share/libonnx-testdata/data/node"


@pytest.mark.skipif(not __import__("os").path.isdir(SUITE), reason="libonnx-testdata is not installed")
def test_float16_models_take_and_give_numpy_float16():
    to32 = systolic.InferenceSession(f"{SUITE}/test_cast_FLOAT16_to_FLOAT/model.onnx")
    assert to32.get_inputs()[0].type == "tensor(float16)"
    x = np.array([[0.5, 1e-5, 65504, 1], [-2, np.inf, 3.14159, 2], [0, -0.0, 6e-8, np.nan]], np.float16)
    y = to32.run(None, {"input": x})[0]
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, x.astype(np.float32))
    to16 = systolic.InferenceSession(f"{SUITE}/test_cast_FLOAT_to_FLOAT16/model.onnx")
    z = (np.random.default_rng(0).standard_normal((3, 4)) * 1000).astype(np.float32)
    z[0, :2] = [70000, 1e-8]  # beyond float16's range, below its smallest subnormal
    h = to16.run(None, {"input": z})[0]
    assert h.dtype == np.float16
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(h, z.astype(np.float16))  # numpy rounds to nearest even too
