"""Python threads run sessions concurrently (each call gets a session of its own) with the
same answers, and the GIL is released while a model runs."""
import threading
import time

import numpy as np

import systolic


def test_four_threads_same_answers(models):
    sess = systolic.InferenceSession(models["tiny"])
    model = systolic.compile(models["tiny"], batch=2)
    xs = [np.random.default_rng(k).standard_normal((2, 3, 32, 32), dtype=np.float32) for k in range(8)]
    want = [sess.run(None, {"input": x})[0] for x in xs]
    errors = []

    def work(t):
        try:
            for rep in range(5):
                for k, x in enumerate(xs):
                    if (k + t + rep) % 2:
                        np.testing.assert_array_equal(sess.run(None, {"input": x})[0], want[k])
                    else:
                        np.testing.assert_array_equal(model.run(x)["y"], want[k])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_gil_released_while_running(zoo):
    sess_options = systolic.SessionOptions()
    sess_options.intra_op_num_threads = 1
    sess = systolic.InferenceSession(zoo("resnet18"), sess_options)
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224), dtype=np.float32)
    sess.run(None, {"input": x})  # compiled and warm
    started, done = threading.Event(), threading.Event()
    run_s = []

    def run():
        started.set()
        t0 = time.perf_counter()
        for _ in range(4):  # long enough to observe on a fast core (one run can take < 20 ms)
            sess.run(None, {"input": x})
        run_s.append(time.perf_counter() - t0)
        done.set()

    t = threading.Thread(target=run)
    t.start()
    started.wait()
    count = 0
    while not done.is_set():  # Python work in this thread while the other one runs the model
        count += 1
    t.join()
    # Holding the GIL would stall this loop for the whole run (one switch interval at most).
    assert run_s[0] > 0.02
    assert count > 1000, (count, run_s)
