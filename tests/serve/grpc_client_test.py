#!/usr/bin/python3
"""The gRPC front end of `systolic serve` as a Triton/KServe client sees it.

Talks to a running server with Debian's python3-grpcio (stubs generated from
src/serve/inference.proto at start). Environment:
  SYSTOLIC_GRPC_ADDR          host:port of the server (without it every test is skipped)
  SYSTOLIC_SERVE_MODEL        an fp32 ResNet-18 (zoo) served with max_batch_size >= 4
  SYSTOLIC_SERVE_INPUT        .npy input for that model (one image, [1,3,224,224] or [3,224,224])
  SYSTOLIC_SERVE_EXPECTED     .npy of the model's output for that input
  SYSTOLIC_SERVE_IMAGE_MODEL  a model compiled with preprocess imagenet and a labels file
  SYSTOLIC_SERVE_IMAGES       a directory of .jpg files for it (else two are drawn with PIL)
  SYSTOLIC_HTTP_ADDR          host:port of the same server's HTTP side, for /metrics (cancellation)
  SYSTOLIC_SERVE_NONZERO_MODEL  a model float[1,3,8,8] -> "r" (a relu), "nz" (NonZero of it) and
                              "pos" (the values nz points at): outputs shaped by each run
Run with /usr/bin/python3: the Debian grpcio is not on other interpreters' paths.
"""
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_common import (NP_OF, assert_rows_match, bytes_tensor, cancelled_since, image_files,  # noqa: E402
                          metric as server_metric, need, parse_bytes_tensor, wait_until_queued)

try:
    import grpc
except ImportError:  # reported per test below instead of failing the import
    grpc = None

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ADDR = os.environ.get("SYSTOLIC_GRPC_ADDR")
MODEL = os.environ.get("SYSTOLIC_SERVE_MODEL")
IMAGE_MODEL = os.environ.get("SYSTOLIC_SERVE_IMAGE_MODEL")
INPUT = os.environ.get("SYSTOLIC_SERVE_INPUT")
EXPECTED = os.environ.get("SYSTOLIC_SERVE_EXPECTED")
IMAGES = os.environ.get("SYSTOLIC_SERVE_IMAGES")
HTTP_ADDR = os.environ.get("SYSTOLIC_HTTP_ADDR")
NONZERO_MODEL = os.environ.get("SYSTOLIC_SERVE_NONZERO_MODEL")

pb = None  # inference_pb2
pb_grpc = None  # inference_pb2_grpc
stub = None  # GRPCInferenceServiceStub
_stub_dir = None

# tritonclient sets its channel limits to INT32_MAX; so do we.
CHANNEL_OPTIONS = [("grpc.max_send_message_length", 2**31 - 1), ("grpc.max_receive_message_length", 2**31 - 1)]


def setUpModule():
    global pb, pb_grpc, stub, _stub_dir
    if grpc is None:
        raise unittest.SkipTest("python3-grpcio is not installed (run with /usr/bin/python3)")
    if not ADDR:
        raise unittest.SkipTest("SYSTOLIC_GRPC_ADDR is not set")
    _stub_dir = tempfile.TemporaryDirectory(prefix="systolic_grpc_stubs_")
    subprocess.run(["protoc", "--python_out=" + _stub_dir.name, "--grpc_python_out=" + _stub_dir.name,
                    "--plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin",
                    "-I", os.path.join(ROOT, "src/serve"), os.path.join(ROOT, "src/serve/inference.proto")],
                   check=True)
    sys.path.insert(0, _stub_dir.name)
    import inference_pb2
    import inference_pb2_grpc
    pb, pb_grpc = inference_pb2, inference_pb2_grpc
    channel = grpc.insecure_channel(ADDR, options=CHANNEL_OPTIONS)
    grpc.channel_ready_future(channel).result(timeout=30)
    stub = inference_pb2_grpc.GRPCInferenceServiceStub(channel)


def tearDownModule():
    if _stub_dir is not None:
        _stub_dir.cleanup()


def raw_request(model, inputs, outputs=(), parameters=None):
    """inputs: [(name, ndarray)] sent as raw_input_contents; outputs: [(name, {param: int})]."""
    req = pb.ModelInferRequest(model_name=model)
    for name, arr in inputs:
        req.inputs.add(name=name, datatype=[k for k, v in NP_OF.items() if v == arr.dtype.type][0],
                       shape=list(arr.shape))
        req.raw_input_contents.append(np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes())
    for name, params in outputs:
        o = req.outputs.add(name=name)
        for k, v in params.items():
            o.parameters[k].int64_param = v
    for k, v in (parameters or {}).items():
        if isinstance(v, str):
            req.parameters[k].string_param = v
        else:
            req.parameters[k].int64_param = v
    return req


def output_arrays(resp):
    """Outputs by name, from raw_output_contents (where tritonclient reads them)."""
    assert len(resp.raw_output_contents) == len(resp.outputs), "every output must come in raw_output_contents"
    out = {}
    for o, raw in zip(resp.outputs, resp.raw_output_contents):
        if o.datatype == "BYTES":
            out[o.name] = np.array(parse_bytes_tensor(raw), dtype=object).reshape(list(o.shape))
        else:
            out[o.name] = np.frombuffer(raw, dtype=np.dtype(NP_OF[o.datatype]).newbyteorder("<")).reshape(list(o.shape))
    return out


class Model:
    """What ModelMetadata says about the model under test."""

    def __init__(self, name):
        self.md = stub.ModelMetadata(pb.ModelMetadataRequest(name=name), timeout=60)
        self.input = self.md.inputs[0]
        self.output = self.md.outputs[0]
        self.item_shape = list(self.input.shape[1:])

    def input_batch(self, n):
        if INPUT:
            one = np.load(INPUT).astype(np.float32).reshape([1] + self.item_shape)
        else:
            one = np.random.default_rng(0).standard_normal([1] + self.item_shape).astype(np.float32)
        return np.repeat(one, n, axis=0)


def expected_row():
    return np.load(EXPECTED).astype(np.float32).reshape(-1) if EXPECTED else None


class Server(unittest.TestCase):
    def test_live_and_ready(self):
        self.assertTrue(stub.ServerLive(pb.ServerLiveRequest(), timeout=10).live)
        self.assertTrue(stub.ServerReady(pb.ServerReadyRequest(), timeout=10).ready)

    def test_metadata(self):
        md = stub.ServerMetadata(pb.ServerMetadataRequest(), timeout=10)
        self.assertEqual(md.name, "systolic")
        self.assertTrue(md.version)
        self.assertEqual(len(set(md.extensions)), len(md.extensions))

    def test_unknown_model_is_not_found(self):
        for call, req in [(stub.ModelMetadata, pb.ModelMetadataRequest(name="no_such_model")),
                          (stub.ModelConfig, pb.ModelConfigRequest(name="no_such_model")),
                          (stub.ModelInfer, raw_request("no_such_model", [("x", np.zeros([1, 3], np.float32))]))]:
            with self.assertRaises(grpc.RpcError) as cm:
                call(req, timeout=10)
            self.assertEqual(cm.exception.code(), grpc.StatusCode.NOT_FOUND, cm.exception.details())
            self.assertIn("no_such_model", cm.exception.details())


@need("SYSTOLIC_SERVE_MODEL")
class ResNet(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = Model(MODEL)
        cls.expected = expected_row()

    def infer(self, req, timeout=120):
        return stub.ModelInfer(req, timeout=timeout)

    def test_model_ready(self):
        self.assertTrue(stub.ModelReady(pb.ModelReadyRequest(name=MODEL), timeout=10).ready)

    def test_metadata_batch_dim(self):
        md = self.model.md
        self.assertEqual(md.name, MODEL)
        self.assertTrue(md.versions)
        self.assertEqual(self.model.input.datatype, "FP32")
        self.assertEqual(list(self.model.input.shape), [-1, 3, 224, 224])
        self.assertEqual(self.model.output.shape[0], -1)

    def test_config(self):
        cfg = stub.ModelConfig(pb.ModelConfigRequest(name=MODEL), timeout=10).config
        self.assertEqual(cfg.name, MODEL)
        self.assertGreaterEqual(cfg.max_batch_size, 4)
        # perf_analyzer matches config inputs to metadata inputs by name; dims omit the batch.
        self.assertEqual([i.name for i in cfg.input], [i.name for i in self.model.md.inputs])
        self.assertEqual(list(cfg.input[0].dims), self.model.item_shape)
        self.assertEqual(cfg.input[0].data_type, pb.TYPE_FP32)
        self.assertEqual([o.name for o in cfg.output], [o.name for o in self.model.md.outputs])

    def check_outputs(self, resp, n, req_id=""):
        self.assertEqual(resp.model_name, MODEL)
        self.assertEqual(resp.id, req_id)
        out = output_arrays(resp)[self.model.output.name]
        self.assertEqual(out.shape[0], n)
        self.assertEqual(out.dtype, np.float32)
        if self.expected is not None:
            assert_rows_match(out, self.expected, rtol=1e-3)
        return out

    def test_raw_batch_1_and_4(self):
        x = self.model.input_batch(1)
        r1 = self.check_outputs(self.infer(raw_request(MODEL, [(self.model.input.name, x)])), 1)
        req = raw_request(MODEL, [(self.model.input.name, self.model.input_batch(4))])
        req.id = "batch-of-4"
        r4 = self.check_outputs(self.infer(req), 4, "batch-of-4")
        for i in range(4):
            np.testing.assert_allclose(r4[i], r1[0], rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(r1).max())))

    def test_typed_fp32_contents(self):
        x = self.model.input_batch(1)
        req = pb.ModelInferRequest(model_name=MODEL)
        t = req.inputs.add(name=self.model.input.name, datatype="FP32", shape=list(x.shape))
        t.contents.fp32_contents.extend(x.reshape(-1).tolist())
        self.check_outputs(self.infer(req), 1)

    def test_wrong_shape_is_invalid_argument(self):
        bad = [
            raw_request(MODEL, [(self.model.input.name, np.zeros([1, 3, 100, 100], np.float32))]),
            raw_request(MODEL, [(self.model.input.name, np.zeros([1, 3, 224, 224], np.float64))]),
        ]
        short = raw_request(MODEL, [(self.model.input.name, self.model.input_batch(1))])
        short.raw_input_contents[0] = short.raw_input_contents[0][:-4]
        bad.append(short)
        for req in bad:
            with self.assertRaises(grpc.RpcError) as cm:
                self.infer(req)
            self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, cm.exception.details())
            self.assertTrue(cm.exception.details())

    def test_20mb_message(self):
        # gRPC's default receive limit is 4 MiB; the server must take a message this large.
        cfg = stub.ModelConfig(pb.ModelConfigRequest(name=MODEL), timeout=10).config
        n = min(cfg.max_batch_size, 35)  # 35 images = 21 MB
        req = raw_request(MODEL, [(self.model.input.name, self.model.input_batch(n))])
        short = 20 * 2**20 - req.ByteSize()
        if short > 0:  # a small max_batch_size: pad the message with a parameter instead
            req.parameters["padding"].string_param = "x" * short
        self.assertGreaterEqual(req.ByteSize(), 20 * 2**20)
        self.check_outputs(self.infer(req, timeout=600), n)

    def test_classification(self):
        x = self.model.input_batch(1)
        k = 3
        resp = self.infer(raw_request(MODEL, [(self.model.input.name, x)], [(self.model.output.name, {"classification": k})]))
        self.assertEqual(resp.outputs[0].datatype, "BYTES")
        out = output_arrays(resp)[self.model.output.name]
        self.assertEqual(list(out.shape), [1, k])
        entries = [e.decode().split(":") for e in out.reshape(-1)]
        scores = [float(e[0]) for e in entries]
        self.assertEqual(scores, sorted(scores, reverse=True))
        if self.expected is not None:
            top = [int(i) for i in np.argsort(-self.expected, kind="stable")[:k]]
            self.assertEqual([int(e[1]) for e in entries], top)
            np.testing.assert_allclose(scores, self.expected[top], rtol=1e-3, atol=1e-3)

    def test_16_concurrent_clients(self):
        x = self.model.input_batch(1)
        errors, results = [], []
        lock = threading.Lock()

        def client(i):
            # One channel per client, as perf_analyzer opens one connection per concurrency level.
            with grpc.insecure_channel(ADDR, options=CHANNEL_OPTIONS) as ch:
                s = pb_grpc.GRPCInferenceServiceStub(ch)
                for j in range(3):
                    req = raw_request(MODEL, [(self.model.input.name, x)])
                    req.id = f"{i}-{j}"
                    try:
                        resp = s.ModelInfer(req, timeout=300)
                        with lock:
                            results.append((req.id, resp))
                    except grpc.RpcError as e:
                        with lock:
                            errors.append(f"{req.id}: {e.code()} {e.details()}")

        threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(len(results), 48)
        first = output_arrays(results[0][1])[self.model.output.name]
        for req_id, resp in results:
            self.assertEqual(resp.id, req_id)
            out = self.check_outputs(resp, 1, req_id)
            np.testing.assert_allclose(out, first, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(first).max())))


@need("SYSTOLIC_SERVE_MODEL", "SYSTOLIC_HTTP_ADDR")
@unittest.skipUnless(NONZERO_MODEL, "SYSTOLIC_SERVE_NONZERO_MODEL is not set")
class RunShapedOutputs(unittest.TestCase):
    """Each answer of a model whose outputs are shaped by its values carries its run's shape."""

    def test_each_answer_has_its_runs_shape(self):
        counts = set()
        for seed in range(3):
            x = np.random.default_rng(seed).standard_normal([1, 3, 8, 8]).astype(np.float32)
            resp = stub.ModelInfer(raw_request(NONZERO_MODEL, [("input", x)]), timeout=60)
            out = output_arrays(resp)
            want = np.stack(np.nonzero(out["r"]))
            self.assertEqual(out["nz"].dtype, np.int64)
            np.testing.assert_array_equal(out["nz"], want)
            np.testing.assert_array_equal(out["pos"], out["r"][out["r"] > 0])
            counts.add(want.shape[1])
        self.assertGreater(len(counts), 1, "every input gave the same count: a stale shape would pass")


class Cancel(unittest.TestCase):
    def test_cancelled_calls_are_dropped_from_the_queue(self):
        model = Model(MODEL)
        cancelled0 = server_metric(HTTP_ADDR, "nv_inference_request_failure", MODEL, reason="CANCELED")
        req = raw_request(MODEL, [(model.input.name, model.input_batch(1))])
        # Fewer than the smallest default queue bound, so none is refused for a full queue.
        futures = [stub.ModelInfer.future(req, timeout=300) for _ in range(8)]
        wait_until_queued(HTTP_ADDR, MODEL, 3)
        for f in futures:
            f.cancel()
        cancelled = cancelled_since(HTTP_ADDR, MODEL, cancelled0)
        self.assertGreaterEqual(cancelled, 1)
        self.check_served(req)

    def check_served(self, req):
        for _ in range(60):  # the queue may still be full of the cancelled calls for a moment
            try:
                stub.ModelInfer(req, timeout=300)
                return
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.UNAVAILABLE:
                    raise
                time.sleep(0.5)
        self.fail("the model still refuses requests after the cancelled ones")


@need("SYSTOLIC_SERVE_IMAGE_MODEL")
class ImageBytes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = Model(IMAGE_MODEL)
        cls.images = image_files(IMAGES, with_png=False)
        if len(cls.images) < 2:
            raise unittest.SkipTest("no JPEG files (set SYSTOLIC_SERVE_IMAGES or install python3-pil)")

    def request(self, images, outputs=()):
        req = pb.ModelInferRequest(model_name=IMAGE_MODEL)
        req.inputs.add(name=self.model.input.name, datatype="BYTES", shape=[len(images)])
        req.raw_input_contents.append(bytes_tensor(images))
        for name, params in outputs:
            o = req.outputs.add(name=name)
            for k, v in params.items():
                o.parameters[k].int64_param = v
        return req

    def test_jpeg_batch(self):
        imgs = [self.images[0], self.images[1], self.images[0]]
        resp = stub.ModelInfer(self.request(imgs), timeout=300)
        out = output_arrays(resp)[self.model.output.name]
        self.assertEqual(out.shape[0], 3)
        self.assertTrue(np.isfinite(out).all())
        np.testing.assert_allclose(out[2], out[0], rtol=1e-5, atol=1e-5)  # the same image twice
        self.assertFalse(np.allclose(out[0], out[1]))

    def test_jpeg_typed_bytes_contents(self):
        req = pb.ModelInferRequest(model_name=IMAGE_MODEL)
        t = req.inputs.add(name=self.model.input.name, datatype="BYTES", shape=[1])
        t.contents.bytes_contents.append(self.images[0])
        typed = output_arrays(stub.ModelInfer(req, timeout=300))[self.model.output.name]
        raw = output_arrays(stub.ModelInfer(self.request(self.images[:1]), timeout=300))[self.model.output.name]
        np.testing.assert_allclose(typed, raw, rtol=1e-5, atol=1e-5)

    def test_jpeg_classification_has_labels(self):
        resp = stub.ModelInfer(self.request(self.images[:2], [(self.model.output.name, {"classification": 2})]),
                               timeout=300)
        out = output_arrays(resp)[self.model.output.name]
        self.assertEqual(list(out.shape), [2, 2])
        for e in out.reshape(-1):
            score, index, label = e.decode().split(":", 2)
            float(score)
            int(index)
            self.assertTrue(label)

    def test_not_an_image_is_invalid_argument(self):
        with self.assertRaises(grpc.RpcError) as cm:
            stub.ModelInfer(self.request([b"not a jpeg at all"]), timeout=60)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, cm.exception.details())


if __name__ == "__main__":
    unittest.main()
