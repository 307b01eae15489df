"""systolic's own API: compile an ONNX model (or load a compiled plan), run it, save it."""
import concurrent.futures
import os
import threading
from typing import NamedTuple

from . import _native


class TensorSpec(NamedTuple):
    name: str
    dtype: object  # numpy dtype
    shape: tuple


class Model:
    """A model compiled for this machine (systolic::Model). run() may be called from many
    threads at once: each concurrent call runs a session of its own, without the GIL."""

    def __init__(self, native):
        self._m = native
        self._names = [o[0] for o in native.outputs]
        self._single = native.inputs[0][0] if len(native.inputs) == 1 else None

    @property
    def inputs(self):
        return [TensorSpec(*s) for s in self._m.inputs]

    @property
    def outputs(self):
        return [TensorSpec(*s) for s in self._m.outputs]

    path = property(lambda self: self._m.path)
    batch = property(lambda self: self._m.batch)
    precision = property(lambda self: self._m.precision, doc="fp32, bf16 or int8")
    threads = property(lambda self: self._m.threads, doc="threads per run")
    instances = property(lambda self: self._m.instances)
    image_input = property(lambda self: self._m.image_input, doc="the input is uint8 RGB images, NHWC")
    image = property(lambda self: self._m.image, doc="resize, crop, mean and std of an image input")
    report = property(lambda self: self._m.report, doc="what opening did: compiled, cache_hit, compile_ms, ...")

    @property
    def flops(self):
        """Floating-point (or int8) operations per run, 2 per multiply-accumulate."""
        return self._m.flops()

    def run(self, feed):
        """{output name: numpy array} for {input name: numpy array} (or one array, for a model
        with one input). Arrays of the input's dtype that are C-contiguous are read in place."""
        if not isinstance(feed, dict) and self._single is not None:
            feed = {self._single: feed}
        return dict(zip(self._names, self._m.run(feed)))

    def run_async(self, feed):
        """run() on a worker thread: a concurrent.futures.Future of its result."""
        return _executor().submit(self.run, feed)

    def save(self, plan_path):
        """Writes the compiled plan; systolic.load() (or the CLI) opens it without compiling."""
        self._m.save(os.fspath(plan_path))

    def __repr__(self):
        ins = ", ".join(f"{n}: {d}{list(s)}" for n, d, s in self._m.inputs)
        return f"<systolic.Model {self.path!r} {self.precision} batch {self.batch} ({ins})>"


_pool = None
_pool_lock = threading.Lock()


def _executor():
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(4, os.cpu_count() or 1),
                                                          thread_name_prefix="systolic")
        return _pool


def _shapes(path, shape):
    """{input name: [dims]} from a dict (values as tuples or "1x3x32x320") or one shape for a
    model with one input."""
    if shape is None:
        return {}

    def dims(v):
        if isinstance(v, str):
            try:
                return [int(d) for d in v.lower().split("x")]
            except ValueError:
                raise _native.InvalidArgument(f"shape '{v}': expected dims like 1x3x224x224") from None
        return [int(d) for d in v]

    if isinstance(shape, dict):
        return {str(k): dims(v) for k, v in shape.items()}
    ins = _native.read_signature(os.fspath(path))["inputs"]
    if len(ins) != 1:
        names = ", ".join(t["name"] for t in ins)
        raise _native.InvalidArgument(f"the model has {len(ins)} inputs ({names}); give shape as a dict by name")
    return {ins[0]["name"]: dims(shape)}


def compile(path, precision=None, batch=None, preprocess=None, shape=None, threads=None, *, instances=None,
            calibration=None, method="minmax", keep_fp32=None, cache=True, tuned=True):
    """Compiles an .onnx for this machine (through the compile cache, like the CLI) and returns
    a Model. precision: fp32, bf16, int8 (None: int8 for a quantized model, else fp32); batch
    (None: the tuned one, else 1); preprocess="imagenet" makes the input uint8 RGB images;
    shape binds symbolic dims; calibration (image/.npy folder, files, "random:N") for int8."""
    if isinstance(calibration, (str, os.PathLike)):
        calibration = [calibration]
    native = _native.open(os.fspath(path), precision=precision or "", batch=int(batch or 0),
                          threads=int(threads or 0), instances=int(instances or 0), preprocess=preprocess or "",
                          shapes=_shapes(path, shape), use_cache=bool(cache), use_tuned=bool(tuned),
                          calibration=[os.fspath(c) for c in calibration or []], method=method,
                          keep_fp32=list(keep_fp32 or []))
    return Model(native)


def load(plan_path, threads=None):
    """Opens a compiled plan (Model.save(), `systolic compile -o`) without compiling."""
    return Model(_native.open(os.fspath(plan_path), threads=int(threads or 0)))
