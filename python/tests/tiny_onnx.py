"""Tiny ONNX models written with a few lines of protobuf encoding (no onnx package needed):
enough to test the Python module without the zoo's large models."""

import numpy as np

FLOAT, UINT8, INT64 = 1, 2, 7


def _varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _int(field, v):
    return _varint(field << 3) + _varint(v)


def _bytes(field, b):
    if isinstance(b, str):
        b = b.encode()
    return _varint(field << 3 | 2) + _varint(len(b)) + b


def _dim(d):
    return _bytes(1, _int(1, d) if isinstance(d, int) else _bytes(2, d))


def value_info(name, elem_type=FLOAT, shape=None):
    tensor = _int(1, elem_type)
    if shape is not None:
        tensor += _bytes(2, b"".join(_dim(d) for d in shape))
    return _bytes(1, name) + _bytes(2, _bytes(1, tensor))


def tensor(name, array):
    a = np.ascontiguousarray(array, dtype=np.float32)
    return b"".join(_int(1, d) for d in a.shape) + _int(2, FLOAT) + _bytes(8, name) + _bytes(9, a.tobytes())


def ints_attr(name, values):
    return _bytes(1, name) + b"".join(_int(8, v) for v in values) + _int(20, 7)


def node(op, inputs, outputs, name="", attrs=(), domain=""):
    b = b"".join(_bytes(1, i) for i in inputs) + b"".join(_bytes(2, o) for o in outputs)
    if name:
        b += _bytes(3, name)
    b += _bytes(4, op) + b"".join(_bytes(5, a) for a in attrs)
    if domain:
        b += _bytes(7, domain)
    return b


def model(nodes, inputs, outputs, initializers=(), name="tiny", producer="systolic-tests", doc="",
          metadata=None, opset=13):
    g = b"".join(_bytes(1, n) for n in nodes) + _bytes(2, name)
    g += b"".join(_bytes(5, t) for t in initializers)
    g += b"".join(_bytes(11, v) for v in inputs) + b"".join(_bytes(12, v) for v in outputs)
    m = _int(1, 8) + _bytes(2, producer) + _int(5, 3) + _bytes(7, g) + _bytes(8, _int(2, opset))
    if doc:
        m += _bytes(6, doc)
    for k, v in (metadata or {}).items():
        m += _bytes(14, _bytes(1, k) + _bytes(2, v))
    return m


def tiny_conv(seed=1, batch="N", hw=(32, 32)):
    """Conv 3x3 (3 -> 16 channels, pad 1) + Relu + GlobalAveragePool on float[N,3,32,32]."""
    w = np.random.default_rng(seed).normal(0, 0.3, (16, 3, 3, 3))
    return model([node("Conv", ["input", "w"], ["c"], "conv", [ints_attr("pads", [1, 1, 1, 1])]),
                  node("Relu", ["c"], ["r"], "relu"), node("GlobalAveragePool", ["r"], ["y"], "gap")],
                 [value_info("input", FLOAT, [batch, 3, *hw])], [value_info("y", FLOAT, [batch, 16, 1, 1])], [tensor("w", w)],
                 doc="a tiny conv net", metadata={"author": "tests"})


def two_io():
    """Inputs a, b float[N,4]; outputs declared as prod = a*b, then sum = a+b."""
    return model([node("Add", ["a", "b"], ["sum"], "add"), node("Mul", ["a", "b"], ["prod"], "mul")],
                 [value_info("a", FLOAT, ["N", 4]), value_info("b", FLOAT, ["N", 4])],
                 [value_info("prod", FLOAT, ["N", 4]), value_info("sum", FLOAT, ["N", 4])], name="two_io")


def relu(n=16):
    """One Relu on float[1,n]: a model whose run is nearly free (the overhead benchmark)."""
    return model([node("Relu", ["x"], ["y"], "relu")], [value_info("x", FLOAT, [1, n])],
                 [value_info("y", FLOAT, [1, n])], name="relu")


def unsupported():
    """A node of a custom domain, which systolic refuses."""
    return model([node("Frobnicate", ["x"], ["y"], "f", domain="com.example")], [value_info("x", FLOAT, [1, 4])],
                 [value_info("y", FLOAT, [1, 4])], name="unsupported")


def reference_tiny_conv(x, seed=1):
    """The tiny conv net in numpy, for checking answers without another engine."""
    w = np.random.default_rng(seed).normal(0, 0.3, (16, 3, 3, 3)).astype(np.float32)
    n, c, h, wd = x.shape
    p = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, 16, h, wd), np.float32)
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,oc->nohw", p[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    return np.maximum(out, 0).mean(axis=(2, 3), keepdims=True)


