#!/usr/bin/python3
"""The HTTP/REST front end of `systolic serve` as a KServe v2 / Triton client sees it.

Talks to a running server with http.client (standard library) and numpy. Environment:
  SYSTOLIC_HTTP_ADDR          host:port of the server (without it every test is skipped)
  SYSTOLIC_SERVE_MODEL        an fp32 ResNet-18 (zoo) served with max_batch_size >= 4
  SYSTOLIC_SERVE_INPUT        .npy input for that model (one image, [1,3,224,224] or [3,224,224])
  SYSTOLIC_SERVE_EXPECTED     .npy of the model's output for that input
  SYSTOLIC_SERVE_IMAGE_MODEL  a model compiled with preprocess imagenet and a labels file
  SYSTOLIC_SERVE_IMAGES       a directory of .jpg files for it (else JPEGs drawn with PIL when
                              installed, and PNGs written here either way)
  SYSTOLIC_SERVE_NONZERO_MODEL  a model float[1,3,8,8] -> "r" (a relu, [1,4,8,8]), "nz"
                              (NonZero of it, int64 [4, count]) and "pos" (the values nz points
                              at, [count]): outputs shaped by each run
Parts whose variables are missing are skipped.
"""
import http.client
import json
import os
import sys
import socket
import threading
import time
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_common import (NP_OF, assert_rows_match, bytes_tensor, cancelled_since, image_files,  # noqa: E402
                          metric as server_metric, need, parse_bytes_tensor, wait_until_queued)

ADDR = os.environ.get("SYSTOLIC_HTTP_ADDR")
MODEL = os.environ.get("SYSTOLIC_SERVE_MODEL")
IMAGE_MODEL = os.environ.get("SYSTOLIC_SERVE_IMAGE_MODEL")
INPUT = os.environ.get("SYSTOLIC_SERVE_INPUT")
EXPECTED = os.environ.get("SYSTOLIC_SERVE_EXPECTED")
IMAGES = os.environ.get("SYSTOLIC_SERVE_IMAGES")
NONZERO_MODEL = os.environ.get("SYSTOLIC_SERVE_NONZERO_MODEL")

HOST, PORT = (ADDR.rsplit(":", 1)[0], int(ADDR.rsplit(":", 1)[1])) if ADDR else (None, None)
HEADER_LENGTH = "Inference-Header-Content-Length"


def setUpModule():
    if not ADDR:
        raise unittest.SkipTest("SYSTOLIC_HTTP_ADDR is not set")


class Reply:
    def __init__(self, resp):
        self.status = resp.status
        self.headers = {k.lower(): v for k, v in resp.getheaders()}
        self.body = resp.read()

    def json(self):
        return json.loads(self.body)

    def error(self):
        """The {"error": msg} body every failure carries."""
        j = self.json()
        assert isinstance(j.get("error"), str) and j["error"], self.body
        return j["error"]


def call(method, path, body=None, headers=None, timeout=300):
    """One request on a fresh connection (a kept-alive one may meet the server's idle timeout)."""
    c = http.client.HTTPConnection(HOST, PORT, timeout=timeout)
    try:
        c.request(method, path, body=body, headers=headers or {})
        return Reply(c.getresponse())
    finally:
        c.close()


def binary_body(header, raws):
    """Triton's binary extension: JSON header, then each raw input in the order of the JSON."""
    h = json.dumps(header).encode()
    return h + b"".join(raws), {HEADER_LENGTH: str(len(h)), "Content-Type": "application/octet-stream"}


def infer(model, header, raws=None, version=None):
    path = f"/v2/models/{model}" + (f"/versions/{version}" if version else "") + "/infer"
    if raws is None:
        return call("POST", path, json.dumps(header).encode(), {"Content-Type": "application/json"})
    body, headers = binary_body(header, raws)
    return call("POST", path, body, headers)


def outputs_of(reply):
    """(response JSON, {name: ndarray}) from a JSON or a binary reply."""
    body = reply.body
    n = int(reply.headers.get(HEADER_LENGTH.lower(), len(body)))
    head = json.loads(body[:n])
    at, out = n, {}
    for o in head["outputs"]:
        size = o.get("parameters", {}).get("binary_data_size")
        if size is not None:
            raw = body[at:at + size]
            at += size
            if o["datatype"] == "BYTES":
                arr = np.array(parse_bytes_tensor(raw), dtype=object)
            else:
                arr = np.frombuffer(raw, dtype=np.dtype(NP_OF[o["datatype"]]).newbyteorder("<"))
        elif o["datatype"] == "BYTES":
            arr = np.array([s.encode() for s in o["data"]], dtype=object)
        else:
            arr = np.array(o["data"], dtype=NP_OF[o["datatype"]])
        out[o["name"]] = arr.reshape(o["shape"])
    assert at == len(body), f"{len(body) - at} unclaimed bytes after the binary outputs"
    return head, out


class Model:
    """What the model metadata route says about the model under test."""

    def __init__(self, name):
        r = call("GET", f"/v2/models/{name}")
        assert r.status == 200, (r.status, r.body)
        self.md = r.json()
        self.input = self.md["inputs"][0]
        self.output = self.md["outputs"][0]
        self.item_shape = list(self.input["shape"][1:])

    def input_batch(self, n):
        if INPUT:
            one = np.load(INPUT).astype(np.float32).reshape([1] + self.item_shape)
        else:
            one = np.random.default_rng(0).standard_normal([1] + self.item_shape).astype(np.float32)
        return np.repeat(one, n, axis=0)


def raw_socket():
    return socket.create_connection((HOST, PORT), timeout=30)


def read_head(sock, deadline=30):
    """Reads up to the end of one response's headers; returns (status, header text)."""
    sock.settimeout(deadline)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1")
    return int(head.split(" ", 2)[1]) if head.startswith("HTTP/") else 0, head


class Server(unittest.TestCase):
    def test_server_metadata(self):
        r = call("GET", "/v2")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.headers["content-type"], "application/json")
        md = r.json()
        self.assertEqual(md["name"], "systolic")
        self.assertTrue(md["version"])
        self.assertIn("binary_tensor_data", md["extensions"])
        self.assertEqual(len(set(md["extensions"])), len(md["extensions"]))

    def test_health(self):
        r = call("GET", "/v2/health/live")
        self.assertEqual((r.status, r.json()), (200, {"live": True}))
        r = call("GET", "/v2/health/ready")
        self.assertEqual((r.status, r.json()), (200, {"ready": True}))

    def test_unknown_routes(self):
        for path in ["/", "/v2/", "/v2/health", "/v2/models", "/V2/health/live", "/v2/health/live/x", "/v3"]:
            r = call("GET", path)
            self.assertEqual(r.status, 404, path)
            self.assertIn(path, r.error())

    def test_wrong_method(self):
        for method, path, allowed in [("POST", "/v2/health/live", "GET"), ("DELETE", "/v2", "GET"),
                                      ("GET", "/v2/repository/index", "POST"), ("PUT", "/metrics", "GET")]:
            r = call(method, path)
            self.assertEqual(r.status, 405, (method, path))
            self.assertEqual(r.headers.get("allow"), allowed)
            r.error()

    def test_unknown_model(self):
        for method, path in [("GET", "/v2/models/no_such_model"), ("GET", "/v2/models/no_such_model/ready"),
                             ("GET", "/v2/models/no_such_model/config"),
                             ("GET", "/v2/models/no_such_model/versions/1")]:
            r = call(method, path)
            self.assertEqual(r.status, 404, path)
            self.assertIn("no_such_model", r.error())
        r = infer("no_such_model", {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1], "data": [1]}]})
        self.assertEqual(r.status, 404)
        self.assertIn("no_such_model", r.error())

    def test_malformed_json(self):
        for body in [b"{", b"[]", b"", b'{"inputs": 5}', b'{"inputs": [{"name": "x"}]}', b"\xff\xfe\x00"]:
            r = call("POST", "/v2/models/no_such_model/infer", body)
            self.assertEqual(r.status, 400, body)
            r.error()

    def test_header_length_past_the_body(self):
        body = b'{"inputs":[]}'
        r = call("POST", "/v2/models/no_such_model/infer", body, {HEADER_LENGTH: str(len(body) + 10)})
        self.assertEqual(r.status, 400)
        self.assertIn(HEADER_LENGTH, r.error())

    def test_malformed_http(self):
        s = raw_socket()
        s.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        status, _ = read_head(s)
        s.close()
        self.assertEqual(status, 400)

    def test_body_over_limit(self):
        # The limit is checked against Content-Length before any body is read: no need to send 1 TiB.
        s = raw_socket()
        s.sendall(b"POST /v2/models/x/infer HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n"
                  b"Content-Length: 1099511627776\r\n\r\n")
        status, _ = read_head(s)
        s.close()
        self.assertEqual(status, 413)

    def test_expect_100_continue(self):
        # libcurl waits a second for the interim 100 before sending a large body.
        s = raw_socket()
        body = b'{"inputs":[]}'
        t0 = time.monotonic()
        s.sendall(b"POST /v2/models/no_such_model/infer HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n"
                  b"Content-Length: %d\r\n\r\n" % len(body))
        status, _ = read_head(s, 5)
        self.assertEqual(status, 100)
        self.assertLess(time.monotonic() - t0, 0.9)
        s.sendall(body)
        status, _ = read_head(s)
        s.close()
        self.assertEqual(status, 404)

    def test_keep_alive(self):
        c = http.client.HTTPConnection(HOST, PORT, timeout=30)
        for path in ["/v2/health/live", "/v2", "/v2/health/ready"]:
            c.request("GET", path)
            r = c.getresponse()
            r.read()
            self.assertEqual(r.status, 200)
            self.assertIsNotNone(r.getheader("Content-Length"))
        c.close()

    def test_half_sent_request_does_not_block_others(self):
        stalled = raw_socket()
        stalled.sendall(b"POST /v2/models/x/infer HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n0123456789")
        try:
            t0 = time.monotonic()
            for _ in range(3):
                self.assertEqual(call("GET", "/v2/health/live", timeout=10).status, 200)
            self.assertLess(time.monotonic() - t0, 5)
            if MODEL:
                m = Model(MODEL)
                x = m.input_batch(1)
                r = infer(MODEL, {"inputs": [{"name": m.input["name"], "datatype": "FP32", "shape": list(x.shape),
                                              "parameters": {"binary_data_size": x.nbytes}}]}, [x.tobytes()])
                self.assertEqual(r.status, 200, r.body[:300])
        finally:
            stalled.close()

    def test_repository_index(self):
        r = call("POST", "/v2/repository/index", b"{}")
        self.assertEqual(r.status, 200)
        index = r.json()
        self.assertIsInstance(index, list)
        if MODEL:
            self.assertIn(MODEL, [m["name"] for m in index])

    def test_load_unknown_model(self):
        r = call("POST", "/v2/repository/models/no_such_model/load", b"{}")
        self.assertIn(r.status, (400, 404))
        self.assertIn("no_such_model", r.error())

    def test_metrics(self):
        if MODEL:
            m = Model(MODEL)
            x = m.input_batch(1)
            infer(MODEL, {"inputs": [{"name": m.input["name"], "datatype": "FP32", "shape": list(x.shape),
                                      "parameters": {"binary_data_size": x.nbytes}}]}, [x.tobytes()])
        r = call("GET", "/metrics")
        self.assertEqual(r.status, 200)
        self.assertEqual(r.headers["content-type"], "text/plain; version=0.0.4")
        text = r.body.decode()
        self.assertIn("nv_inference_request_success", text)
        if MODEL:
            self.assertRegex(text, r'nv_inference_request_success\{[^}]*model="%s"[^}]*\} [1-9]' % MODEL)


@need("SYSTOLIC_SERVE_MODEL")
class ResNet(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = Model(MODEL)
        cls.expected = np.load(EXPECTED).astype(np.float32).reshape(-1) if EXPECTED else None
        cls.name = cls.model.input["name"]
        cls.out = cls.model.output["name"]

    def json_input(self, x, nested=False):
        return {"name": self.name, "datatype": "FP32", "shape": list(x.shape),
                "data": x.tolist() if nested else x.reshape(-1).tolist()}

    def binary_input(self, x):
        return {"name": self.name, "datatype": "FP32", "shape": list(x.shape),
                "parameters": {"binary_data_size": x.nbytes}}

    def check(self, r, n, req_id=None, binary=False):
        self.assertEqual(r.status, 200, r.body[:500])
        if binary:
            self.assertEqual(r.headers["content-type"], "application/octet-stream")
            self.assertIn(HEADER_LENGTH.lower(), r.headers)
        else:
            self.assertEqual(r.headers["content-type"], "application/json")
            self.assertNotIn(HEADER_LENGTH.lower(), r.headers)
        head, outs = outputs_of(r)
        self.assertEqual(head["model_name"], MODEL)
        if req_id is not None:
            self.assertEqual(head["id"], req_id)
        out = outs[self.out]
        self.assertEqual(out.shape[0], n)
        self.assertEqual(out.dtype, np.float32)
        if self.expected is not None:
            assert_rows_match(out, self.expected)
        return out

    def test_model_metadata(self):
        md = self.model.md
        self.assertEqual(md["name"], MODEL)
        self.assertTrue(md["versions"])
        self.assertTrue(md["platform"])
        self.assertEqual(self.model.input["datatype"], "FP32")
        self.assertEqual(self.model.input["shape"], [-1, 3, 224, 224])
        self.assertEqual(self.model.output["shape"][0], -1)
        r = call("GET", f"/v2/models/{MODEL}/versions/{md['versions'][0]}")
        self.assertEqual((r.status, r.json()["name"]), (200, MODEL))

    def test_model_ready(self):
        r = call("GET", f"/v2/models/{MODEL}/ready")
        self.assertEqual((r.status, r.json()), (200, {"name": MODEL, "ready": True}))

    def test_config(self):
        r = call("GET", f"/v2/models/{MODEL}/config")
        self.assertEqual(r.status, 200)
        cfg = r.json()
        self.assertGreaterEqual(cfg["max_batch_size"], 4)
        self.assertEqual([i["name"] for i in cfg["input"]], [i["name"] for i in self.model.md["inputs"]])

    def test_json_flat_and_nested(self):
        x = self.model.input_batch(1)
        flat = self.check(infer(MODEL, {"inputs": [self.json_input(x)]}), 1)
        nested = self.check(infer(MODEL, {"inputs": [self.json_input(x, nested=True)]}), 1)
        np.testing.assert_allclose(nested, flat, rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(flat).max())))

    def test_binary_in_and_out(self):
        x = self.model.input_batch(1)
        r = infer(MODEL, {"inputs": [self.binary_input(x)], "parameters": {"binary_data_output": True}}, [x.tobytes()])
        self.check(r, 1, binary=True)
        # Per-output binary_data overrides the request's binary_data_output.
        r = infer(MODEL, {"inputs": [self.binary_input(x)], "parameters": {"binary_data_output": True},
                          "outputs": [{"name": self.out, "parameters": {"binary_data": False}}]}, [x.tobytes()])
        self.check(r, 1)
        r = infer(MODEL, {"inputs": [self.json_input(x)],
                          "outputs": [{"name": self.out, "parameters": {"binary_data": True}}]})
        self.check(r, 1, binary=True)

    def test_batch_of_4(self):
        x = self.model.input_batch(1)
        one = self.check(infer(MODEL, {"inputs": [self.binary_input(x)]}, [x.tobytes()]), 1)
        x4 = self.model.input_batch(4)
        four = self.check(infer(MODEL, {"id": "batch-of-4", "inputs": [self.binary_input(x4)],
                                        "parameters": {"binary_data_output": True}}, [x4.tobytes()]),
                          4, "batch-of-4", binary=True)
        for i in range(4):
            np.testing.assert_allclose(four[i], one[0], rtol=1e-4, atol=1e-5 * max(1.0, float(np.abs(one).max())))

    def test_id_echo(self):
        x = self.model.input_batch(1)
        self.check(infer(MODEL, {"id": "req-\u00e9-42", "inputs": [self.json_input(x)]}), 1, "req-\u00e9-42")
        head, _ = outputs_of(infer(MODEL, {"inputs": [self.binary_input(x)]}, [x.tobytes()]))
        self.assertIn(head.get("id", ""), ("",))

    def test_classification(self):
        x = self.model.input_batch(1)
        k = 3
        for binary in (False, True):
            r = infer(MODEL, {"inputs": [self.binary_input(x)],
                              "outputs": [{"name": self.out, "parameters": {"classification": k, "binary_data": binary}}]},
                      [x.tobytes()])
            self.assertEqual(r.status, 200, r.body[:300])
            head, outs = outputs_of(r)
            self.assertEqual(head["outputs"][0]["datatype"], "BYTES")
            out = outs[self.out]
            self.assertEqual(list(out.shape), [1, k])
            entries = [e.decode().split(":") for e in out.reshape(-1)]
            scores = [float(e[0]) for e in entries]
            self.assertEqual(scores, sorted(scores, reverse=True))
            if self.expected is not None:
                top = [int(i) for i in np.argsort(-self.expected, kind="stable")[:k]]
                self.assertEqual([int(e[1]) for e in entries], top)
                np.testing.assert_allclose(scores, self.expected[top], rtol=1e-3, atol=1e-3)

    def expect_400(self, r, *words):
        self.assertEqual(r.status, 400, r.body[:300])
        msg = r.error()
        for w in words:
            self.assertIn(w, msg)
        return msg

    def test_bad_shape_datatype_size(self):
        x = self.model.input_batch(1)
        small = np.zeros([1, 3, 100, 100], np.float32)
        self.expect_400(infer(MODEL, {"inputs": [self.binary_input(small)]}, [small.tobytes()]), self.name)
        # Element count disagrees with the shape.
        bad = self.json_input(x)
        bad["data"] = bad["data"][:-1]
        self.expect_400(infer(MODEL, {"inputs": [bad]}), self.name)
        # Nested data whose rows disagree with the shape.
        bad = self.json_input(x, nested=True)
        bad["shape"] = [1, 3, 224, 225]
        self.expect_400(infer(MODEL, {"inputs": [bad]}), self.name)
        for dt in ["FP64", "INT32", "NOPE"]:
            d = self.binary_input(x.astype(np.float64) if dt == "FP64" else x)
            d["datatype"] = dt
            self.expect_400(infer(MODEL, {"inputs": [d]}, [(x.astype(np.float64) if dt == "FP64" else x).tobytes()]),
                            self.name)
        self.expect_400(infer(MODEL, {"inputs": [dict(self.json_input(x), datatype="FP16")]}), "FP16")
        # binary_data_size that disagrees with the shape, a truncated body, bytes left over.
        d = self.binary_input(x)
        d["parameters"]["binary_data_size"] = x.nbytes - 4
        self.expect_400(infer(MODEL, {"inputs": [d]}, [x.tobytes()[:-4]]), self.name)
        self.expect_400(infer(MODEL, {"inputs": [self.binary_input(x)]}, [x.tobytes()[:-100]]), self.name)
        self.expect_400(infer(MODEL, {"inputs": [self.binary_input(x)]}, [x.tobytes() + b"extra"]))
        # A range error names the input.
        self.expect_400(infer(MODEL, {"inputs": [{"name": self.name, "datatype": "UINT8", "shape": [2],
                                                  "data": [1, 300]}]}), self.name, "300")
        # A declared shape far past the body is an error, not an allocation.
        self.expect_400(infer(MODEL, {"inputs": [{"name": self.name, "datatype": "FP32",
                                                  "shape": [2**40, 3, 224, 224], "data": [1.0]}]}))
        self.expect_400(infer(MODEL, {"inputs": []}))
        self.expect_400(infer(MODEL, {"inputs": [self.binary_input(x)], "outputs": [{"name": "no_such_output"}]},
                              [x.tobytes()]), "no_such_output")

    def test_concurrent_clients(self):
        x = self.model.input_batch(1)
        errors, done = [], []
        lock = threading.Lock()

        def client(i):
            for j in range(2):
                rid = f"{i}-{j}"
                r = infer(MODEL, {"id": rid, "inputs": [self.binary_input(x)],
                                  "parameters": {"binary_data_output": True}}, [x.tobytes()])
                with lock:
                    (done if r.status == 200 else errors).append((rid, r))

        threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual([(rid, r.status, r.body[:200]) for rid, r in errors], [])
        for rid, r in done:
            self.check(r, 1, rid, binary=True)


@need("SYSTOLIC_SERVE_MODEL")
class Disconnect(unittest.TestCase):
    def test_closed_connections_are_dropped_from_the_queue(self):
        model = Model(MODEL)
        x = model.input_batch(1)
        body, headers = binary_body({"inputs": [{"name": model.input["name"], "datatype": "FP32",
                                                 "shape": list(x.shape),
                                                 "parameters": {"binary_data_size": x.nbytes}}]}, [x.tobytes()])
        head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        request = (f"POST /v2/models/{MODEL}/infer HTTP/1.1\r\nHost: t\r\n{head}"
                   f"Content-Length: {len(body)}\r\n\r\n").encode() + body
        cancelled0 = server_metric(ADDR, "nv_inference_request_failure", MODEL, reason="CANCELED")
        # The default queue bound (4 batches of 4) minus the batch running, so none is refused;
        # closed once at least 8 wait behind the batch running, so that on a fast machine too
        # the last ones are still queued (a batch time away at least) when the closes arrive.
        socks = [raw_socket() for _ in range(16)]
        for s in socks:
            s.sendall(request)
        wait_until_queued(ADDR, MODEL, 12)
        for s in socks:
            s.close()
        # A closed connection sets the request's cancelled flag.
        cancelled = cancelled_since(ADDR, MODEL, cancelled0)
        self.assertGreaterEqual(cancelled, 1)
        for _ in range(60):  # the queue may still hold the dropped requests for a moment
            r = call("POST", f"/v2/models/{MODEL}/infer", body, headers)
            if r.status != 503:
                break
            time.sleep(0.5)
        self.assertEqual(r.status, 200, r.body[:300])


@need("SYSTOLIC_SERVE_IMAGE_MODEL")
class ImageBytes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = Model(IMAGE_MODEL)
        cls.images = image_files(IMAGES)

    def request(self, images, k=0, binary=True):
        header = {"inputs": [{"name": self.model.input["name"], "datatype": "BYTES", "shape": [len(images)],
                              "parameters": {"binary_data_size": len(bytes_tensor(images))}}]}
        if k:
            header["outputs"] = [{"name": self.model.output["name"],
                                  "parameters": {"classification": k, "binary_data": binary}}]
        return infer(IMAGE_MODEL, header, [bytes_tensor(images)])

    def test_images_as_bytes(self):
        imgs = [self.images[0], self.images[1], self.images[0]]
        r = self.request(imgs)
        self.assertEqual(r.status, 200, r.body[:300])
        out = outputs_of(r)[1][self.model.output["name"]]
        self.assertEqual(out.shape[0], 3)
        self.assertTrue(np.isfinite(out).all())
        np.testing.assert_allclose(out[2], out[0], rtol=1e-5, atol=1e-5)  # the same image twice
        self.assertFalse(np.allclose(out[0], out[1]))

    def test_classification_top1_with_labels(self):
        classes = int(np.prod(self.model.output["shape"][1:]))
        for binary in (False, True):
            r = self.request(self.images[:2], k=1, binary=binary)
            self.assertEqual(r.status, 200, r.body[:300])
            out = outputs_of(r)[1][self.model.output["name"]]
            self.assertEqual(list(out.shape), [2, 1])
            for e in out.reshape(-1):
                score, index, label = e.decode().split(":", 2)
                float(score)
                self.assertTrue(0 <= int(index) < classes, e)
                self.assertTrue(label, e)

    def test_corrupt_image_names_the_item(self):
        corrupt = self.images[0][: len(self.images[0]) // 3]
        r = self.request([self.images[0], corrupt])
        self.assertEqual(r.status, 400, r.body[:300])
        msg = r.error()
        self.assertIn(self.model.input["name"], msg)
        self.assertIn("item 1", msg)
        r = self.request([b"not an image at all"])
        self.assertEqual(r.status, 400, r.body[:300])
        self.assertIn("item 0", r.error())


@unittest.skipUnless(NONZERO_MODEL, "SYSTOLIC_SERVE_NONZERO_MODEL is not set")
class RunShapedOutputs(unittest.TestCase):
    """A model whose output's shape comes from its values (as detections' do): each answer
    carries its own shape, in JSON and in binary."""

    def test_metadata_and_config(self):
        md = call("GET", f"/v2/models/{NONZERO_MODEL}").json()
        nz = [o for o in md["outputs"] if o["name"] == "nz"][0]
        self.assertEqual(nz["datatype"], "INT64")
        self.assertIn(-1, nz["shape"])
        cfg = call("GET", f"/v2/models/{NONZERO_MODEL}/config").json()
        self.assertEqual(cfg["max_batch_size"], 0)

    def test_each_answer_has_its_runs_shape(self):
        counts = set()
        for seed in range(3):
            x = np.random.default_rng(seed).standard_normal([1, 3, 8, 8]).astype(np.float32)
            tensor = {"name": "input", "datatype": "FP32", "shape": [1, 3, 8, 8]}
            for binary in (False, True):
                header = {"inputs": [dict(tensor, data=x.ravel().tolist())] if not binary else
                          [dict(tensor, parameters={"binary_data_size": x.nbytes})],
                          "outputs": [{"name": n, "parameters": {"binary_data": binary}} for n in ("r", "nz", "pos")]}
                r = infer(NONZERO_MODEL, header, [x.tobytes()] if binary else None)
                self.assertEqual(r.status, 200, r.body[:300])
                _, out = outputs_of(r)
                want = np.stack(np.nonzero(out["r"]))
                self.assertGreater(want.shape[1], 0)
                self.assertEqual(out["nz"].dtype, np.int64)
                np.testing.assert_array_equal(out["nz"], want)
                np.testing.assert_array_equal(out["pos"], out["r"][out["r"] > 0])
                counts.add(want.shape[1])
        self.assertGreater(len(counts), 1, "every input gave the same count: a stale shape would pass")

    def test_classification_is_refused(self):
        x = np.zeros([1, 3, 8, 8], np.float32)
        r = infer(NONZERO_MODEL, {"inputs": [{"name": "input", "datatype": "FP32", "shape": [1, 3, 8, 8],
                                              "data": x.ravel().tolist()}],
                                  "outputs": [{"name": "pos", "parameters": {"classification": 2}}]})
        self.assertEqual(r.status, 400, r.body)
        self.assertIn("shaped by each run", r.error())


if __name__ == "__main__":
    unittest.main()
