"""ONNX Runtime's API, kept: answers against onnxruntime-node on the zoo models, the metadata
ORT reports, options, providers, dynamic batch, output selection, and a script written for ORT
running unchanged with `import systolic as ort`."""
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import systolic as ort
from conftest import BUILD, ROOT, SYSTOLIC, max_rel_error, ort_outputs


@pytest.mark.parametrize("name,batch", [("resnet18", 1), ("mobilenet_v2", 2)])
def test_matches_onnxruntime(zoo, tmp_path, name, batch):
    path = zoo(name)
    x = np.random.default_rng(7).standard_normal((batch, 3, 224, 224), dtype=np.float32)
    want = ort_outputs(path, str(tmp_path / "ort"), {"input": x})
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (got,) = sess.run(None, {"input": x})
    assert got.shape == want["logits"].shape == (batch, 1000)
    assert got.dtype == np.float32
    assert max_rel_error(got, want["logits"]) < 1e-4


def test_metadata_as_ort_reports_it(zoo):
    sess = ort.InferenceSession(zoo("resnet18"))
    (i,), (o,) = sess.get_inputs(), sess.get_outputs()
    assert (i.name, i.shape, i.type) == ("input", ["N", 3, 224, 224], "tensor(float)")
    assert (o.name, o.shape, o.type) == ("logits", ["N", 1000], "tensor(float)")
    meta = sess.get_modelmeta()
    assert meta.producer_name == "systolic-zoo"
    assert meta.graph_name == "resnet18"
    assert meta.version == 1
    assert "resnet18" in meta.description
    assert sess.get_providers() == ["CPUExecutionProvider"]
    assert ort.get_available_providers() == ["CPUExecutionProvider"]
    assert ort.get_device() == "CPU"
    assert sess.get_overridable_initializers() == []


def test_tiny_metadata_and_answers(models):
    sess = ort.InferenceSession(models["tiny"])
    assert sess.get_modelmeta().custom_metadata_map == {"author": "tests"}
    assert sess.get_modelmeta().description == "a tiny conv net"
    from tiny_onnx import reference_tiny_conv
    x = np.random.default_rng(1).standard_normal((3, 3, 32, 32), dtype=np.float32)
    (y,) = sess.run(None, {"input": x})
    np.testing.assert_allclose(y, reference_tiny_conv(x), rtol=1e-4, atol=1e-5)


def test_batch_changes_between_calls(models):
    from tiny_onnx import reference_tiny_conv
    sess = ort.InferenceSession(models["tiny"])
    for n in (1, 4, 2, 1):
        x = np.random.default_rng(n).standard_normal((n, 3, 32, 32), dtype=np.float32)
        (y,) = sess.run(None, {"input": x})
        assert y.shape == (n, 16, 1, 1)
        np.testing.assert_allclose(y, reference_tiny_conv(x), rtol=1e-4, atol=1e-5)


def test_symbolic_spatial_dims_bound_per_call(models):
    from tiny_onnx import reference_tiny_conv
    sess = ort.InferenceSession(models["tiny_hw"])
    assert sess.get_inputs()[0].shape == ["N", 3, "H", "W"]
    for hw in ((17, 9), (32, 32)):
        x = np.random.default_rng(3).standard_normal((1, 3, *hw), dtype=np.float32)
        (y,) = sess.run(None, {"input": x})
        np.testing.assert_allclose(y, reference_tiny_conv(x), rtol=1e-4, atol=1e-5)


def test_free_dimension_override(models):
    opts = ort.SessionOptions()
    opts.add_free_dimension_override_by_name("N", 3)
    sess = ort.InferenceSession(models["tiny"], sess_options=opts)
    (y,) = sess.run(None, {"input": np.zeros((3, 3, 32, 32), np.float32)})
    assert y.shape == (3, 16, 1, 1)


def test_list_inputs_bind_the_batch(models):
    sess = ort.InferenceSession(models["two_io"])
    total, = sess.run(["sum"], {"a": [[1, 2, 3, 4]] * 3, "b": np.ones((3, 4), np.float32)})
    np.testing.assert_array_equal(total, np.arange(1, 5, dtype=np.float32)[None].repeat(3, 0) + 1)


def test_output_order_and_selection(models):
    sess = ort.InferenceSession(models["two_io"])
    assert [o.name for o in sess.get_outputs()] == ["prod", "sum"]
    assert [i.name for i in sess.get_inputs()] == ["a", "b"]
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    b = np.full((2, 4), 2, np.float32)
    prod, total = sess.run(None, {"a": a, "b": b})
    np.testing.assert_array_equal(prod, a * b)
    np.testing.assert_array_equal(total, a + b)
    (only,) = sess.run(["sum"], {"a": a, "b": b})
    np.testing.assert_array_equal(only, a + b)
    s2, p2 = sess.run(["sum", "prod"], {"a": a, "b": b})
    np.testing.assert_array_equal(p2, a * b)
    assert sess.run([], {"a": a, "b": b})[0].shape == (2, 4)


def test_session_options_and_providers(models):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.log_severity_level = 3
    opts.enable_profiling = False
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    assert opts.get_session_config_entry("session.intra_op.allow_spinning") == "0"
    with pytest.raises(AttributeError):
        opts.intra_op_threads = 2  # a typo is an error, as in ORT
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sess = ort.InferenceSession(models["tiny"], opts, providers=["CUDAExecutionProvider", ("CPUExecutionProvider", {})])
    assert any("CUDAExecutionProvider" in str(w.message) for w in caught)
    assert sess.get_providers() == ["CPUExecutionProvider"]
    assert sess.get_session_options() is opts
    run_opts = ort.RunOptions()
    run_opts.log_severity_level = 3
    (y,) = sess.run(None, {"input": np.zeros((1, 3, 32, 32), np.float32)}, run_opts)
    assert y.shape == (1, 16, 1, 1)


def test_model_bytes_and_pathlike(models, tmp_path):
    import pathlib
    with open(models["tiny"], "rb") as f:
        data = f.read()
    x = np.ones((1, 3, 32, 32), np.float32)
    a = ort.InferenceSession(data).run(None, {"input": x})[0]
    b = ort.InferenceSession(pathlib.Path(models["tiny"])).run(None, {"input": x})[0]
    np.testing.assert_array_equal(a, b)


def test_plan_file(models, tmp_path):
    plan = str(tmp_path / "tiny.plan")
    ort.compile(models["tiny"], batch=2).save(plan)
    sess = ort.InferenceSession(plan)
    assert sess.get_inputs()[0].shape == [2, 3, 32, 32]
    (y,) = sess.run(None, {"input": np.zeros((2, 3, 32, 32), np.float32)})
    assert y.shape == (2, 16, 1, 1)
    with pytest.raises(ort.InvalidArgument, match="expected float32\\[2,3,32,32\\]"):
        sess.run(None, {"input": np.zeros((1, 3, 32, 32), np.float32)})


ORT_SCRIPT = """
import numpy as np
import systolic as ort

so = ort.SessionOptions()
so.intra_op_num_threads = 2
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
sess = ort.InferenceSession(MODEL, sess_options=so, providers=["CPUExecutionProvider"])
input_name = sess.get_inputs()[0].name
output_name = sess.get_outputs()[0].name
shape = [d if isinstance(d, int) else 1 for d in sess.get_inputs()[0].shape]
x = np.random.rand(*shape).astype(np.float32)
result = sess.run([output_name], {input_name: x})[0]
top = np.argsort(result.reshape(result.shape[0], -1), axis=1)[:, ::-1][:, :5]
try:
    sess.run(None, {input_name: x.astype(np.float64)})
except Exception as e:
    kind = type(e).__name__
print(input_name, output_name, result.shape, top.shape, kind)
"""


def test_ort_script_runs_unchanged(zoo, tmp_path):
    script = tmp_path / "ort_script.py"
    script.write_text(f"MODEL = {zoo('resnet18')!r}\n" + textwrap.dedent(ORT_SCRIPT))
    env = dict(os.environ, PYTHONPATH=os.path.join(BUILD, "python"))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["input", "logits", "(1,", "1000)", "(1,", "5)", "InvalidArgument"]


def test_outputs_shaped_by_the_run(tmp_path):
    """NonZero and NonMaxSuppression (inside an If) decide how many rows the output has: the
    spec names the dim, run() returns the rows of this input, as the CLI's run gives them."""
    path = os.path.join(ROOT, "fuzz", "corpus", "onnx_compile", "dynamic_tail_if.onnx")
    s = ort.InferenceSession(path)
    assert s.get_outputs()[0].shape == ["K", 4]
    x = np.random.default_rng(0).standard_normal((1, 3, 8, 8)).astype(np.float32)
    (out,) = s.run(None, {"x": x})
    np.save(tmp_path / "x.npy", x)
    subprocess.run([SYSTOLIC, "run", path, "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", str(tmp_path)],
                   check=True, capture_output=True)
    want = np.load(tmp_path / "out.npy")
    assert out.shape == want.shape and out.shape[0] > 0 and out.shape[1] == 4
    np.testing.assert_array_equal(out, want)
