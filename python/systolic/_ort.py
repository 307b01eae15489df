"""ONNX Runtime's Python API over systolic: a script written for ORT's CPU provider runs
unchanged with ``import systolic as ort``.

ORT binds a model's symbolic dimensions (the batch, an OCR width) per call; a systolic plan is
compiled for fixed shapes, so a session compiles one plan per distinct set of input shapes it
is run with (through the compile cache) and keeps the most recent few.
"""
import collections
import enum
import os
import tempfile
import threading
import warnings

import numpy as np

from . import _native

CPU = "CPUExecutionProvider"

# ORT's spelling of element types ("tensor(float)"), by ONNX TensorProto.DataType.
_ONNX_TYPES = {
    1: "float", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 8: "string",
    9: "bool", 10: "float16", 11: "double", 12: "uint32", 13: "uint64", 16: "bfloat16",
}
_ONNX_CODES = {"float32": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7, "bool": 9,
               "float16": 10, "float64": 11, "uint32": 12, "uint64": 13}
_KEPT_MODELS = 8  # compiled shapes a session keeps


class GraphOptimizationLevel(enum.IntEnum):
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class ExecutionOrder(enum.IntEnum):
    DEFAULT = 0
    PRIORITY_BASED = 1


class SessionOptions:
    """ORT's SessionOptions. intra_op_num_threads (0: every core) sets the threads of each run
    and free dimension overrides bind symbolic dims; the rest is accepted and kept, since
    systolic's compiler always optimizes fully and runs sequentially."""

    __slots__ = ("intra_op_num_threads", "inter_op_num_threads", "graph_optimization_level", "execution_mode",
                 "execution_order", "log_severity_level", "log_verbosity_level", "logid", "enable_profiling",
                 "profile_file_prefix", "optimized_model_filepath", "enable_cpu_mem_arena", "enable_mem_pattern",
                 "enable_mem_reuse", "use_deterministic_compute", "_config", "_free_dims")

    def __init__(self):
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.execution_order = ExecutionOrder.DEFAULT
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.enable_profiling = False
        self.profile_file_prefix = "onnxruntime_profile_"
        self.optimized_model_filepath = ""
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.use_deterministic_compute = False
        self._config = {}
        self._free_dims = {}

    def add_session_config_entry(self, key, value):
        self._config[str(key)] = str(value)

    def get_session_config_entry(self, key):
        if key not in self._config:
            raise _native.InvalidArgument(f"session config entry '{key}' is not set")
        return self._config[key]

    def add_free_dimension_override_by_name(self, dim_name, dim_value):
        self._free_dims[str(dim_name)] = int(dim_value)

    def add_free_dimension_override_by_denotation(self, dim_denotation, dim_value):
        pass  # systolic reads no denotations; ORT too ignores ones the model lacks

    def register_custom_ops_library(self, library_path):
        raise _native.NotImplemented("custom op libraries are not supported")

    def add_initializer(self, name, ort_value):
        raise _native.NotImplemented("overriding initializers is not supported")


class RunOptions:
    """ORT's RunOptions; accepted and kept (a run is not cancellable)."""

    def __init__(self):
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.terminate = False
        self.only_execute_path_to_fetches = False
        self._config = {}

    def add_run_config_entry(self, key, value):
        self._config[str(key)] = str(value)

    def get_run_config_entry(self, key):
        return self._config[key]


class NodeArg:
    """An input or output as ORT describes it: name, shape (ints, dim names, None) and type."""

    __slots__ = ("name", "shape", "type")

    def __init__(self, name, shape, type):
        self.name = name
        self.shape = shape
        self.type = type

    def __repr__(self):
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"


class ModelMetadata:
    __slots__ = ("producer_name", "graph_name", "domain", "description", "graph_description", "version",
                 "custom_metadata_map")

    def __init__(self, sig):
        self.producer_name = sig.get("producer_name", "")
        self.graph_name = sig.get("graph_name", "")
        self.domain = sig.get("domain", "")
        self.description = sig.get("doc_string", "")
        self.graph_description = sig.get("graph_doc_string", "")
        self.version = sig.get("model_version", 0)
        self.custom_metadata_map = dict(sig.get("metadata", {}))


def get_available_providers():
    return [CPU]


def get_all_providers():
    return [CPU]


def get_device():
    return "CPU"


def set_default_logger_severity(level):
    pass


def set_seed(seed):
    pass


def _provider_names(providers):
    names = []
    for p in providers or []:
        names.append(p[0] if isinstance(p, (tuple, list)) else p)
    return names


def _spec_from_compiled(name, dtype, shape):
    return {"name": name, "dtype": dtype, "onnx_type": _ONNX_CODES.get(str(dtype), 0), "shape": list(shape)}


class InferenceSession:
    """onnxruntime.InferenceSession: the model at ``path_or_bytes`` (an .onnx, its bytes, or a
    systolic .plan) compiled for this machine. run() may be called from many threads at once;
    each concurrent call gets a session of its own and runs without the GIL."""

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **kwargs):
        self._options = sess_options if sess_options is not None else SessionOptions()
        self._tmp = None
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            # The library opens files; the bytes live in a file for the session's lifetime.
            self._tmp = tempfile.NamedTemporaryFile(prefix="systolic-", suffix=".onnx")
            self._tmp.write(bytes(path_or_bytes))
            self._tmp.flush()
            path = self._tmp.name
        else:
            path = os.fspath(path_or_bytes)
        self._model_path = path
        self._threads = max(0, int(self._options.intra_op_num_threads or 0))
        self._providers = [CPU]
        for name in _provider_names(providers):
            if name != CPU:
                warnings.warn(f"Specified provider '{name}' is not in available provider names."
                              f"Available providers: '{CPU}'", stacklevel=2)
        self._lock = threading.Lock()
        self._models = collections.OrderedDict()  # input shapes -> (native model, output order)
        self._last = None

        if not os.path.exists(path):
            raise _native.NoSuchFile(f"cannot open model file {path}")
        with open(path, "rb") as f:
            self._is_plan = f.read(8) == b"SYSTPLAN"
        if self._is_plan:
            model = self._open({})
            self._sig = {"inputs": [_spec_from_compiled(*s) for s in model.inputs],
                         "outputs": [_spec_from_compiled(*s) for s in model.outputs]}
            self._remember(model)
        else:
            self._sig = _native.read_signature(path)
            shapes = self._default_shapes()
            if shapes is not None:
                self._remember(self._open(shapes))

    # --- ORT's methods --------------------------------------------------------------------

    def run(self, output_names, input_feed, run_options=None):
        """The outputs named (all, in the model's order, for None or []) as numpy arrays."""
        c = self._last
        if c is None:  # nothing compiled yet: a dim only a feed binds
            c = self._compiled_for(input_feed)
        try:
            outs = c.model.run(input_feed)
        except _native._ShapeMismatch:
            if self._is_plan:
                raise
            c = self._compiled_for(input_feed)
            outs = c.model.run(input_feed)
        except _native.InvalidArgument:
            if not self._is_plan:
                self._compiled_for(input_feed, compile=False)  # words it against the declared shapes
            raise
        self._last = c
        if not output_names:
            return outs if c.order is None else [outs[i] for i in c.order]
        try:
            return [outs[c.index[n]] for n in output_names]
        except KeyError:
            bad = next(n for n in output_names if n not in c.index)
            raise _native.InvalidArgument(f"Invalid Output Name:{bad}") from None
        except TypeError:
            raise _native.InvalidArgument("output_names must be a list of output names or None") from None

    def get_inputs(self):
        return [self._node_arg(t, k, True) for k, t in enumerate(self._sig["inputs"])]

    def get_outputs(self):
        return [self._node_arg(t, k, False) for k, t in enumerate(self._sig["outputs"])]

    def get_overridable_initializers(self):
        return []

    def get_modelmeta(self):
        return ModelMetadata(self._sig)

    def get_providers(self):
        return list(self._providers)

    def get_provider_options(self):
        return {CPU: {}}

    def get_session_options(self):
        return self._options

    def set_providers(self, providers=None, provider_options=None):
        for name in _provider_names(providers):
            if name != CPU:
                warnings.warn(f"Specified provider '{name}' is not in available provider names."
                              f"Available providers: '{CPU}'", stacklevel=2)

    def disable_fallback(self):
        pass

    def enable_fallback(self):
        pass

    def end_profiling(self):
        return ""

    def get_profiling_start_time_ns(self):
        return 0

    # --- shapes and compiled models -------------------------------------------------------

    def _node_arg(self, t, k, is_input):
        shape, code = t["shape"], t["onnx_type"]
        c = self._last
        if c is not None and (shape is None or code == 0):
            # The file leaves it open: what the compiled model says.
            specs = c.model.inputs if is_input else c.model.outputs
            _, dtype, cshape = specs[k if is_input else c.index[t["name"]]]
            if shape is None:
                shape = list(cshape)
            if code == 0:
                code = _ONNX_CODES.get(str(dtype), 0)
        return NodeArg(t["name"], list(shape) if shape is not None else [],
                       f"tensor({_ONNX_TYPES.get(code, 'undefined')})")

    def _default_shapes(self):
        """Shapes for the inputs with a symbolic batch bound to 1 (or as free dimension overrides
        say); None when another dim is unbound, to compile at the first run."""
        shapes, symbolic = {}, False
        for t in self._sig["inputs"]:
            if t["shape"] is None:
                return None
            shape = []
            for d, v in enumerate(t["shape"]):
                if isinstance(v, int):
                    shape.append(v)
                    continue
                symbolic = True
                if v in self._options._free_dims:
                    shape.append(self._options._free_dims[v])
                elif d == 0:
                    shape.append(1)
                else:
                    return None
            shapes[t["name"]] = shape
        return shapes if symbolic else {}

    def _open(self, shapes):
        return _native.open(self._model_path, threads=self._threads, shapes=shapes, use_tuned=False)

    def _remember(self, model):
        c = _Compiled(model, [t["name"] for t in self._sig["outputs"]])
        with self._lock:
            self._models[c.key] = c
            while len(self._models) > _KEPT_MODELS:
                self._models.popitem(last=False)
        self._last = c
        return c

    def _compiled_for(self, feed, compile=True):
        """The model compiled for the feed's shapes, compiling it when none is yet (or, with
        compile=False, only the checks of the feed against the declared inputs)."""
        if not isinstance(feed, dict):
            raise _native.InvalidArgument("input_feed must be a dict of input name -> numpy array")
        names = [t["name"] for t in self._sig["inputs"]]
        for name in feed:
            if name not in names:
                raise _native.InvalidArgument(f"the model has no input named '{name}' (inputs: {', '.join(names)})")
        shapes = []
        for t in self._sig["inputs"]:
            if t["name"] not in feed:
                raise _native.InvalidArgument(f"input '{t['name']}' was not given")
            v = feed[t["name"]]
            shape = tuple(int(d) for d in np.shape(v))
            want = t["shape"]
            dtype = getattr(v, "dtype", None)
            if (want is not None and (len(shape) != len(want) or
                                      any(isinstance(w, int) and w != g for w, g in zip(want, shape)))
                    or (dtype is not None and t["dtype"] is not None and dtype != t["dtype"])):
                dims = "" if want is None else "[" + ",".join("?" if d is None else str(d) for d in want) + "]"
                raise _native.InvalidArgument(f"input '{t['name']}': expected {t['dtype']}{dims}, "
                                              f"got {dtype or type(v).__name__}[{','.join(map(str, shape))}]")
            shapes.append(shape)
        if not compile:
            return None
        key = tuple(shapes)
        with self._lock:
            c = self._models.get(key)
            if c is not None:
                self._models.move_to_end(key)
                return c
        return self._remember(self._open({t["name"]: list(s) for t, s in zip(self._sig["inputs"], shapes)}))


class _Compiled:
    """One compiled model of a session, with its outputs mapped to the declared order."""

    __slots__ = ("model", "key", "index", "order")

    def __init__(self, model, declared):
        self.model = model
        self.key = tuple(tuple(s[2]) for s in model.inputs)
        names = [o[0] for o in model.outputs]
        self.index = {n: k for k, n in enumerate(names)}
        self.order = None if declared == names else [self.index[n] for n in declared if n in self.index]
