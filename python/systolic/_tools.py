"""The CLI's computing commands as functions, each returning the dictionary its --json prints."""
import json
import os

from . import _native
from ._model import Model, _shapes


def _open(model, precision=None, batch=1, shape=None, calibration=None, method="minmax", threads=0, **extra):
    """A native model: a Model's own, or the path opened as the CLI opens it (no tuned defaults)."""
    if isinstance(model, Model):
        return model._m
    shapes = _shapes(model, shape)
    for dims in shapes.values():
        dims[0] = batch
    if isinstance(calibration, (str, os.PathLike)):
        calibration = [calibration]
    return _native.open(os.fspath(model), precision=precision or "", batch=int(batch), threads=int(threads or 0),
                        shapes=shapes, use_tuned=False, calibration=[os.fspath(c) for c in calibration or []],
                        method=method, **extra)


def simulate(model, target="tpu-v4", batch=1, precision=None, *, compare=None, what_if=None, sweep=False,
             check=False, iters=30, threads=0, convention="native", shape=None, calibration=None):
    """`systolic simulate MODEL --json`: the plan's cost on a systolic-array target (TPU presets,
    "host", a .json preset). batch may be a list; compare=[targets] for rows side by side (the
    measured host row of the CLI's --compare is left out, as with --no-measure); what_if=
    ["array=256x256", ...] for variants; check=True with target "host" for the per-layer check
    against measured times. model: an .onnx / .plan path or a Model."""
    batches = [int(b) for b in batch] if isinstance(batch, (list, tuple)) else [int(batch)]
    if isinstance(what_if, str):
        what_if = [w for w in what_if.split(",") if w]
    if isinstance(compare, str):
        compare = [c for c in compare.split(",") if c]
    native = _open(model, precision, 1 if sweep else batches[0], shape, calibration)
    return json.loads(_native.simulate(native, batches, list(compare) if compare else [target], list(what_if or []),
                                       precision or "", convention, bool(sweep), bool(check), int(iters),
                                       int(threads)))


def bench(model, batch=None, threads=None, instances=None, iters=20, warmup=3, precision=None, *, per_layer=False,
          shape=None, tuned=True):
    """`systolic bench MODEL --json`: latency percentiles, throughput, achieved GFLOP/s (GOP/s
    for int8) against the measured peak, peak RSS, over `instances` concurrent sessions on
    random inputs. threads: per instance (default: the cores shared out). Without batch,
    threads and instances, the configuration `systolic tune` saved is used (tuned=False
    ignores it). model: an .onnx / .plan path or a Model."""
    if isinstance(model, Model):
        native, name = model._m, model.path
    else:
        name = os.fspath(model)
        use_tuned = bool(tuned) and batch is None and threads is None and instances is None
        native = _native.open(name, precision=precision or "", batch=int(batch or 0), shapes=_shapes(name, shape),
                              use_tuned=use_tuned)
        if use_tuned:
            # the tuned split, else one instance on every core, as the CLI
            threads, instances = native.threads, native.instances
    return json.loads(_native.bench(native, int(threads or 0), 1 if instances is None else int(instances), int(iters),
                                    int(warmup), bool(per_layer), name))


def tune(model, latency_budget=None, memory_budget=None, precision=None, *, batches=None, max_batch=None,
         threads=None, seconds_per_point=2.0, save=True, cache=True):
    """`systolic tune MODEL --json --no-svg`: measures batch sizes and thread/instance splits on
    this machine and recommends the configuration with the best throughput within the budgets
    (latency_budget: p99 ms per run; memory_budget: bytes, or "2G"); save=True keeps it for
    bench, classify and compile. An .onnx is compiled per batch; a .plan's batch is fixed. No
    configuration within the budgets: the dict has "error" and "recommended" is None."""
    if isinstance(batches, (list, tuple)):
        batches = ",".join(str(int(b)) for b in batches)
    elif batches is not None:
        batches = str(batches)
    for name, v in (("latency_budget", latency_budget), ("max_batch", max_batch), ("threads", threads)):
        if v is not None and v <= 0:
            raise _native.InvalidArgument(f"{name} {v}: must be positive")
    if seconds_per_point < 0:
        raise _native.InvalidArgument(f"seconds_per_point {seconds_per_point}: must not be negative")
    return json.loads(_native.tune(os.fspath(model), precision or "", float(latency_budget or 0),
                                   "" if memory_budget is None else str(memory_budget), batches or "",
                                   int(max_batch or 32), batches is not None or max_batch is not None,
                                   int(threads or 0), float(seconds_per_point), bool(save), bool(cache)))


def quantize(model, calibration, method="minmax", output=None, *, keep_fp32=None, batch=1, preprocess=None,
             cache=True, reduce_range=False, shape=None):
    """`systolic quantize`: calibrates a float .onnx on `calibration` (image or .npy folders and
    files, or "random:N") with `method` (minmax, percentile, entropy) and returns the int8
    Model; output="X.plan" also writes the compiled int8 plan, output="X.onnx" the QDQ model
    other engines run (reduce_range: 7-bit weights), returned as the int8 Model it compiles to.
    shape binds symbolic dims other than the batch, as compile's does (a QDQ file then takes
    those sizes)."""
    path = os.fspath(model)
    qdq = False
    if output is not None:
        output = os.fspath(output)
        qdq = output.endswith(".onnx") and len(output) > 5
        if not qdq and not (output.endswith(".plan") and len(output) > 5):
            raise _native.InvalidArgument(f"-o {output}: write a .plan (compiled int8) or an .onnx (QDQ model)")
        if not os.access(os.path.dirname(output) or ".", os.W_OK):
            raise _native.InvalidArgument(f"cannot write {output}: {os.strerror(13)}")
    if not os.path.exists(path):
        raise _native.NoSuchFile(f"cannot open model file {path}")
    if _native.model_precision(path) == "int8":
        raise _native.InvalidArgument(f"{path} is already quantized (it has QuantizeLinear/DequantizeLinear or "
                                      "QLinear ops); run it as it is, or quantize its float original")
    if qdq:
        if isinstance(calibration, (str, os.PathLike)):
            calibration = [calibration]
        shapes = _shapes(path, shape)
        for dims in shapes.values():
            dims[0] = int(batch)
        _native.quantize_qdq(path, output, [os.fspath(c) for c in calibration], method, list(keep_fp32 or []),
                             bool(reduce_range), preprocess or "", shapes, int(batch))
        return Model(_open(output, "int8", int(batch), None, use_cache=bool(cache)))
    m = Model(_open(path, "int8", int(batch), shape, calibration, method, preprocess=preprocess or "",
                    keep_fp32=list(keep_fp32 or []), use_cache=bool(cache)))
    if output is not None:
        m.save(output)
    return m


def _collect(root, out):
    """Every regular file under root (recursively, hidden entries skipped, sorted), as the CLI."""
    if not os.path.exists(root):
        raise _native.InvalidArgument(f"images {root}: no such file or directory")
    if not os.path.isdir(root):
        out.append(root)
        return
    for name in sorted(os.listdir(root)):
        if name.startswith("."):
            continue
        p = os.path.join(root, name)
        if os.path.isdir(p):
            _collect(p, out)
        else:
            out.append(p)


class Classification:
    """classify()'s results: iterate for one dict per image as it completes (the CLI's JSON
    Lines objects: path, status, top [{class, prob, label}] or error); afterwards, summary is
    the CLI's --summary-json object."""

    def __init__(self, stream, model, files, top, labels, softmax, loaders, instances):
        self._stream, self._model, self._files = stream, model, files
        self._top, self._labels, self._softmax = top, labels, softmax
        self._loaders, self._instances = loaders, instances
        self.summary = None

    def __iter__(self):
        return self

    def __next__(self):
        import numpy as np
        try:
            item, error, scores = next(self._stream)
        except StopIteration:
            self._summarize()
            raise
        path = self._files[item]
        if error is not None:
            return {"path": path, "status": "error", "error": error}
        p = scores
        if self._softmax:
            e = np.exp(scores - scores.max())
            # float exponentials, summed in order in double, as the CLI's top-k (to float rounding)
            p = (e.astype(np.float64) / np.cumsum(e, dtype=np.float64)[-1]).astype(np.float32)
        best = np.argsort(-p, kind="stable")[:self._top]
        top = []
        for c in best:
            entry = {"class": int(c), "prob": float(p[c])}
            if self._labels:
                entry["label"] = self._labels[c]
            top.append(entry)
        return {"path": path, "status": "ok", "top": top}

    def _summarize(self):
        import numpy as np
        r = self._stream.report()
        if r is None or self.summary is not None:
            return
        lat = np.array(r["latency_ms"], dtype=np.float64)
        pct = (lambda q: float(np.percentile(lat, q))) if lat.size else (lambda q: 0.0)
        wall = r["wall_s"]
        self.summary = {
            "model": self._model.path, "images": r["images"], "failed": r["failed"], "files": len(self._files),
            "wall_s": wall, "throughput_per_s": r["images"] / wall if wall > 0 else 0, "p50_ms": pct(50),
            "p90_ms": pct(90), "p99_ms": pct(99), "batch": self._model.batch, "instances": self._instances,
            "threads_per_instance": r["threads_per_instance"], "loaders": self._loaders,
            "bottleneck": r["bottleneck"], "stages": r["stages"],
        }


def classify(paths, model, top=5, batch=None, *, labels=None, threads=None, instances=None, loaders=None, queue=2,
             precision=None, preprocess="imagenet", tuned=True):
    """`systolic classify`: JPEG/PNG files (paths: files or folders, searched recursively)
    through the asynchronous decode -> batch -> infer pipeline, streaming one result per image
    as it completes. model: an .onnx (compiled with preprocess="imagenet"), an image .plan,
    or a Model with image input. labels: a list, or a file with one class name per line.
    threads: inference threads in all, shared by `instances` sessions; without batch, threads
    and instances, the configuration `systolic tune` saved is used (tuned=False ignores it)."""
    files = []
    for p in [paths] if isinstance(paths, (str, os.PathLike)) else paths:
        _collect(os.fspath(p), files)
    if not files:
        raise _native.InvalidArgument("images: no files found")
    if int(top) < 1:
        raise _native.InvalidArgument(f"top {top}: must be at least 1")
    if isinstance(model, Model):
        m = model
    else:
        path = os.fspath(model)
        is_plan = os.path.isfile(path) and open(path, "rb").read(8) == b"SYSTPLAN"
        given = batch is not None or threads is not None or instances is not None
        n = int(instances or 0)
        per = int(threads) // max(1, n or 1) if threads else 0
        if threads and per < 1:
            raise _native.InvalidArgument(f"instances {n} needs at least as many threads (have {threads})")
        m = Model(_native.open(path, precision=precision or "", batch=int(batch or 0), threads=per, instances=n,
                               preprocess="" if is_plan else (preprocess or ""), use_tuned=bool(tuned) and not given))
    inst = int(instances or m.instances)
    if isinstance(labels, (str, os.PathLike)):
        with open(labels) as f:
            labels = [line.rstrip() for line in f]
        while labels and not labels[-1]:
            labels.pop()
    classes = m.outputs[0].shape[-1]
    if labels is not None and len(labels) != classes:
        raise _native.InvalidArgument(f"labels: {len(labels)} names for {classes} classes")
    cores = os.cpu_count() or 1
    n_loaders = int(loaders or max(1, cores // 4))
    stream = _native.ClassifyStream(m._m, files, inst, n_loaders, int(queue))
    return Classification(stream, m, files, int(top), labels, not _native.ends_in_softmax(m._m), n_loaders, inst)
