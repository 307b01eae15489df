"""systolic: a hardware-aware inference compiler and runtime.

Two APIs over one library:

- ONNX Runtime's: ``import systolic as ort``, then ``ort.InferenceSession(path).run(None, feed)``;
- systolic's own: ``systolic.compile(path, precision="int8", batch=8)`` -> Model with run(),
  run_async(), save(); ``systolic.load(plan)``; quantize, classify, bench, tune, simulate.

Errors are systolic.Error or one of its subclasses, named as ONNX Runtime names them
(InvalidArgument, NoSuchFile, InvalidProtobuf, InvalidGraph, NotImplemented, Fail, ...).
"""
from . import _native
from ._native import (Error, Fail, InvalidArgument, InvalidGraph, InvalidProtobuf, NoSuchFile, NotImplemented,
                      RuntimeException)
from ._model import Model, TensorSpec, compile, load
from ._ort import (ExecutionMode, ExecutionOrder, GraphOptimizationLevel, InferenceSession, ModelMetadata, NodeArg,
                   RunOptions, SessionOptions, get_all_providers, get_available_providers, get_device,
                   set_default_logger_severity, set_seed)

__version__ = _native.version


def info():
    """The detected CPU, the measured peak of each precision and the conv kernel each runs here,
    as `systolic info` prints it (the peaks are measured: this takes a moment)."""
    return _native.host_info()
from ._tools import Classification, bench, classify, quantize, simulate, tune  # noqa: E402
