#!/usr/bin/python3
"""systolic serve under load and faults: dynamic batching, overload (only 200 or 503, none
lost), deadlines, reload under load, failed reload, metrics agreeing with the client's counts,
and SIGTERM while requests are in flight (every admitted request answered, exit 0).
Needs a running server: SYSTOLIC_HTTP_ADDR, SYSTOLIC_SERVE_MODEL (max_batch_size 4,
max_queue_delay_us > 0), SYSTOLIC_SERVE_SMALLQ_MODEL (max_queue_size 2, max_batch_size 1),
SYSTOLIC_SERVE_REPO (the repository), SYSTOLIC_SERVE_PID (for the SIGTERM test, run last)."""
import http.client
import json
import os
import shutil
import signal
import sys
import threading
import time
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_common import metric as server_metric  # noqa: E402

ADDR = os.environ.get("SYSTOLIC_HTTP_ADDR", "")
MODEL = os.environ.get("SYSTOLIC_SERVE_MODEL", "")
SMALLQ = os.environ.get("SYSTOLIC_SERVE_SMALLQ_MODEL", "")
REPO = os.environ.get("SYSTOLIC_SERVE_REPO", "")
PID = int(os.environ.get("SYSTOLIC_SERVE_PID", "0"))
X = np.random.RandomState(1).randn(1, 3, 224, 224).astype(np.float32)


def conn():
    host, port = ADDR.rsplit(":", 1)
    return http.client.HTTPConnection(host, int(port), timeout=120)


def infer(c, model, x=X, params=None):
    """Binary-extension request; returns (status, headers, body, seconds)."""
    req = {"inputs": [{"name": "input", "shape": list(x.shape), "datatype": "FP32",
                       "parameters": {"binary_data_size": x.nbytes}}],
           "outputs": [{"name": "logits", "parameters": {"binary_data": True}}]}
    if params:
        req["parameters"] = params
    head = json.dumps(req).encode()
    t0 = time.monotonic()
    c.request("POST", f"/v2/models/{model}/infer", head + x.tobytes(),
              {"Inference-Header-Content-Length": str(len(head)), "Content-Type": "application/octet-stream"})
    r = c.getresponse()
    body = r.read()
    return r.status, dict(r.getheaders()), body, time.monotonic() - t0


def metric(name, model):
    return server_metric(ADDR, name, model)


def hammer(model, clients, per_client, results, params=None):
    def run():
        c = conn()
        for _ in range(per_client):
            try:
                s, h, b, dt = infer(c, model, params=params)
                results.append((s, h, b, dt))
            except Exception as e:  # a lost request: the test counts it
                results.append((None, {}, str(e).encode(), 0))
                c.close()
                c = conn()
        c.close()
    ts = [threading.Thread(target=run) for _ in range(clients)]
    for t in ts:
        t.start()
    return ts


@unittest.skipUnless(ADDR and MODEL, "no server (SYSTOLIC_HTTP_ADDR, SYSTOLIC_SERVE_MODEL)")
class Faults(unittest.TestCase):
    def test_a_batching_merges_concurrent_requests(self):
        inf0, ex0 = metric("nv_inference_count", MODEL), metric("nv_inference_exec_count", MODEL)
        results = []
        for t in hammer(MODEL, 8, 4, results):
            t.join()
        self.assertEqual([r[0] for r in results], [200] * 32)
        inf = metric("nv_inference_count", MODEL) - inf0
        ex = metric("nv_inference_exec_count", MODEL) - ex0
        self.assertEqual(inf, 32)
        self.assertLess(ex, inf, "concurrent requests should share batches")

    def test_b_deadline_drops_before_compute(self):
        c = conn()
        inf0 = metric("nv_inference_count", MODEL)
        s, _, body, _ = infer(c, MODEL, params={"timeout": 1})
        c.close()
        self.assertEqual(s, 503, body)
        self.assertIn(b"timed out", body)
        self.assertEqual(metric("nv_inference_count", MODEL), inf0, "an expired request was computed")

    @unittest.skipUnless(SMALLQ, "no small-queue model")
    def test_c_overload_is_503_fast_and_nothing_lost(self):
        results = []
        ok0 = metric("nv_inference_request_success", SMALLQ)
        for t in hammer(SMALLQ, 16, 3, results):
            t.join()
        self.assertEqual(len(results), 48)
        codes = [r[0] for r in results]
        self.assertTrue(all(s in (200, 503) for s in codes), codes)
        self.assertGreater(codes.count(503), 0, "16 clients on a queue of 2 must be refused sometimes")
        self.assertGreater(codes.count(200), 0)
        for s, h, b, dt in results:
            if s == 503:
                self.assertEqual(h.get("Retry-After"), "1")
                self.assertIn(b"queue", b)
                self.assertLess(dt, 0.5, "a full queue must be answered at once")
        self.assertEqual(metric("nv_inference_request_success", SMALLQ) - ok0, codes.count(200))

    @unittest.skipUnless(REPO, "no repository")
    def test_d_reload_under_load_drops_nothing(self):
        results = []
        ts = hammer(MODEL, 3, 6, results)
        time.sleep(0.3)
        c = conn()
        c.request("POST", f"/v2/repository/models/{MODEL}/load", b"{}")
        r = c.getresponse()
        self.assertEqual(r.status, 200, r.read())
        c.close()
        for t in ts:
            t.join()
        self.assertEqual([x[0] for x in results], [200] * 18)

    @unittest.skipUnless(REPO, "no repository")
    def test_e_failed_reload_keeps_the_old_version(self):
        cfg = os.path.join(REPO, MODEL, "config.json")
        keep = cfg + ".keep"
        shutil.copy(cfg, keep)
        try:
            with open(cfg, "w") as f:
                f.write('{"max_batch_size": "four"}')
            c = conn()
            c.request("POST", f"/v2/repository/models/{MODEL}/load", b"{}")
            r = c.getresponse()
            body = r.read()
            c.close()
            self.assertEqual(r.status, 400, body)
            self.assertIn(b"max_batch_size", body)
        finally:
            shutil.move(keep, cfg)
        c = conn()
        s, _, _, _ = infer(c, MODEL)
        c.close()
        self.assertEqual(s, 200)

    @unittest.skipUnless(PID, "no server pid")
    def test_z_sigterm_finishes_admitted_requests(self):
        results = []
        ts = hammer(MODEL, 4, 5, results)
        time.sleep(0.5)
        os.kill(PID, signal.SIGTERM)
        for t in ts:
            t.join()
        codes = [r[0] for r in results]
        # Requests admitted before the signal succeed; later ones are refused (503) or find the
        # port closed (None); none admitted fails.
        self.assertGreater(codes.count(200), 0)
        for s, h, b, dt in results:
            self.assertIn(s, (200, 503, None), b)
            if s == 503:
                self.assertIn(b"shutting down", b)


if __name__ == "__main__":
    unittest.main(verbosity=2)
