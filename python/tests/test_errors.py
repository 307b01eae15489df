"""Bad input raises the right exception (with the CLI's one-line message), never crashes."""
import numpy as np
import pytest

import systolic


def test_exception_hierarchy():
    for cls in (systolic.InvalidArgument, systolic.NotImplemented, systolic.Fail, systolic.NoSuchFile,
                systolic.InvalidGraph, systolic.InvalidProtobuf, systolic.RuntimeException):
        assert issubclass(cls, systolic.Error)
    assert issubclass(systolic.Error, RuntimeError)


def test_missing_file(tmp_path):
    with pytest.raises(systolic.NoSuchFile, match="cannot open model file"):
        systolic.InferenceSession(str(tmp_path / "none.onnx"))
    with pytest.raises(systolic.NoSuchFile, match="cannot open model file"):
        systolic.compile(str(tmp_path / "none.onnx"))
    with pytest.raises(systolic.NoSuchFile):
        systolic.load(str(tmp_path / "none.plan"))


@pytest.mark.parametrize("data", [b"", b"\x0a\xff\xff\xff garbage", b"SYSTPLAN\x01\x02 truncated plan"])
def test_malformed_file(tmp_path, data):
    p = tmp_path / "bad.onnx"
    p.write_bytes(data)
    with pytest.raises(systolic.Error) as e:
        systolic.InferenceSession(str(p))
    assert "\n" not in str(e.value) and str(p) in str(e.value)
    if not data.startswith(b"SYSTPLAN"):
        assert isinstance(e.value, systolic.InvalidProtobuf)
    with pytest.raises(systolic.Error):
        systolic.compile(str(p))


def test_truncated_model(models, tmp_path):
    with open(models["tiny"], "rb") as f:
        data = f.read()
    p = tmp_path / "truncated.onnx"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(systolic.Error):
        systolic.InferenceSession(str(p))


def test_unsupported_op(models):
    with pytest.raises(systolic.NotImplemented, match="unsupported op: com.example.Frobnicate"):
        systolic.InferenceSession(models["unsupported"])


def test_bad_options(models):
    with pytest.raises(systolic.InvalidArgument, match="precision 'fp8'"):
        systolic.compile(models["tiny"], precision="fp8")
    with pytest.raises(systolic.InvalidArgument, match="preprocess 'resnet'"):
        systolic.compile(models["tiny"], preprocess="resnet")
    with pytest.raises(systolic.InvalidArgument):
        systolic.compile(models["tiny"], batch=-1)
    with pytest.raises(systolic.InvalidArgument):
        systolic.compile(models["tiny"], shape={"input": "1x4x32x32"})  # C is 3 in the model
    with pytest.raises(systolic.InvalidArgument):
        systolic.compile(models["tiny"], shape={"input": "1xAx32"})


@pytest.fixture(params=["ort", "model"])
def runner(request, models):
    """run(feed) through either API, on the tiny conv model."""
    if request.param == "ort":
        sess = systolic.InferenceSession(models["tiny"])
        return lambda feed: sess.run(None, feed)
    m = systolic.compile(models["tiny"])
    return m.run


GOOD = np.zeros((1, 3, 32, 32), np.float32)


@pytest.mark.parametrize("feed,match", [
    ({"input": GOOD.astype(np.float64)}, "expected float32.*got float64"),
    ({"input": GOOD.astype(np.int64)}, "got int64"),
    ({"input": GOOD.astype(">f4")}, "expected float32"),
    ({"input": np.zeros((1, 4, 32, 32), np.float32)}, "expected float32.*got float32\\[1,4,32,32\\]"),
    ({"input": np.zeros((3, 32, 32), np.float32)}, "got float32\\[3,32,32\\]"),
    ({"input": np.zeros((1, 3, 32, 32, 1), np.float32)}, "expected"),
    ({}, "input 'input' was not given"),
    ({"image": GOOD}, "no input named 'image' \\(inputs: input\\)"),
    ({"input": GOOD, "extra": GOOD}, "no input named 'extra'"),
    ({1: GOOD}, "names must be strings|no input named"),
    ({"input": "not a tensor"}, "input 'input'"),
    ({"input": [[1.0, 2.0]]}, "input 'input'"),
    ({"input": None}, "input 'input'"),
])
def test_bad_feed(runner, feed, match):
    with pytest.raises(systolic.InvalidArgument, match=match):
        runner(feed)
    assert runner({"input": GOOD})  # still usable afterwards


def test_feed_not_a_dict(models):
    sess = systolic.InferenceSession(models["two_io"])
    with pytest.raises(systolic.InvalidArgument):
        sess.run(None, [np.zeros((1, 4), np.float32)])
    m = systolic.compile(models["two_io"])
    with pytest.raises(systolic.InvalidArgument):
        m.run(np.zeros((1, 4), np.float32))  # two inputs: a dict is needed


def test_unknown_output_name(models):
    sess = systolic.InferenceSession(models["two_io"])
    feed = {"a": np.zeros((1, 4), np.float32), "b": np.zeros((1, 4), np.float32)}
    with pytest.raises(systolic.InvalidArgument, match="Invalid Output Name:total"):
        sess.run(["sum", "total"], feed)
    with pytest.raises(systolic.InvalidArgument):
        sess.run("sum", feed)  # a string, not a list of names
