"""The in-process workloads (W2, W3, W4, W7), written once against a ``tf`` module.

Each ``setup_*(tf, env)`` builds its graph and session once (warm-up included) and returns
``measure(quick) -> {metric id: value}``, which runs one round. The same functions run
under dtf and under TensorFlow's ``tf.compat.v1``, so both execute literally the same code.
Metric ids ending in ``@numpy`` are numpy's figure for the same computation.
"""
from __future__ import annotations

import statistics
import time

import numpy as np

from bench.cluster import Cluster

MiB = 1 << 20
TRANSFER_MIB = (1, 16, 64, 256)
TCP_MIB = (16, 64)
TASK0, TASK1 = "/job:local/task:0", "/job:local/task:1"


class Env:
    """What one probe process holds between rounds: the 2-task cluster and the sessions."""

    def __init__(self, impl: str, tf):
        self.impl = impl
        self.tf = tf
        self._cluster = None
        self._tcp_cluster = None
        self._closers: list = []

    def cluster(self) -> Cluster:
        if self._cluster is None:
            self._cluster = Cluster(self.impl, {"local": 2}).start_jobs("local")
        return self._cluster

    def tcp_cluster(self) -> Cluster:
        """Two tasks that send every tensor through TCP (no shared memory, no Unix socket),
        as tasks on different hosts do. TensorFlow's tasks always do."""
        if self._tcp_cluster is None:
            self._tcp_cluster = Cluster(self.impl, {"local": 2}, env={"DTF_SHM": "0", "DTF_IPC": "0"}).start_jobs("local")
        return self._tcp_cluster

    def session(self, graph, target=""):
        sess = self.tf.Session(target, graph=graph)
        self._closers.append(sess.close)
        return sess

    def on_close(self, fn):
        self._closers.append(fn)

    def close(self):
        for fn in reversed(self._closers):
            try:
                fn()
            except Exception:  # noqa: BLE001 - tearing down; the cluster goes next anyway
                pass
        for cluster in (self._cluster, self._tcp_cluster):
            if cluster is not None:
                cluster.stop()


def call_times(fn, n: int) -> list:
    """Seconds taken by each of ``n`` calls of ``fn``."""
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def percentile(xs, q: float) -> float:
    return float(np.percentile(np.asarray(xs), q))


def _warm(fn, n=5):
    for _ in range(n):
        fn()


# -- W2: a small step whose ops span two server processes ---------------------------------
def setup_cross_task(tf, env):
    cluster = env.cluster()
    g = tf.Graph()
    with g.as_default():
        with tf.device(TASK1):
            v = tf.Variable(1.0, name="v")
            a = v + 1.0  # a variable, so no constant folding removes the cross-task edge
        with tf.device(TASK0):
            b = a * 2.0
        init = tf.global_variables_initializer()
    sess = env.session(g, cluster.target("local", 0))
    sess.run(init)
    step = lambda: sess.run(b)  # noqa: E731
    _warm(step, 20)

    def measure(quick):
        ts = call_times(step, 100 if quick else 300)
        return {"w2.p50_ms": percentile(ts, 50) * 1e3, "w2.p90_ms": percentile(ts, 90) * 1e3}

    return measure


# -- W3: float32 tensors task to task and task to client ----------------------------------
def _transfer_steps(mib: int, quick: bool) -> int:
    return max(2, (32 if quick else 96) // (mib + 2))


def setup_transfer(tf, env, tcp_only=False, sizes=TRANSFER_MIB):
    cluster = env.tcp_cluster() if tcp_only else env.cluster()
    prefix = "w3.tcp_" if tcp_only else "w3."
    g = tf.Graph()
    fetches = {}
    with g.as_default():
        for mib in sizes:
            n = mib * MiB // 4
            with tf.device(TASK1):
                remote = tf.Variable(tf.zeros([n]), name=f"remote_{mib}")
            with tf.device(TASK0):
                # Slicing one element on task 0 needs the whole tensor moved there.
                moved = tf.slice(remote, [0], [1])
                local = tf.Variable(tf.zeros([n]), name=f"local_{mib}")
            fetches[mib] = (moved, local)
        init = tf.global_variables_initializer()
    sess = env.session(g, cluster.target("local", 0))
    sess.run(init)
    for moved, local in fetches.values():
        _warm(lambda: sess.run(moved), 2)
        _warm(lambda: sess.run(local), 2)

    def measure(quick):
        out = {}
        for mib, (moved, local) in fetches.items():
            n = _transfer_steps(mib, quick)
            gb = mib * MiB / 1e9
            out[f"{prefix}task_to_task_{mib}mib_gbs"] = gb / statistics.median(
                call_times(lambda: sess.run(moved), n))
            out[f"{prefix}task_to_client_{mib}mib_gbs"] = gb / statistics.median(
                call_times(lambda: sess.run(local), n))
        return out

    return measure


# -- W4: the seeds' fed placeholder mean, split over two tasks ----------------------------
def setup_fed_mean(tf, env):
    cluster = env.cluster()
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, 100)
        with tf.device(TASK1):
            first_batch = tf.slice(x, [0], [50])
            mean1 = tf.reduce_mean(first_batch)
        with tf.device(TASK0):
            second_batch = tf.slice(x, [50], [-1])
            mean2 = tf.reduce_mean(second_batch)
            mean = (mean1 + mean2) / 2
    sess = env.session(g, cluster.target("local", 0))
    batches = [np.random.random(100) for _ in range(16)]
    state = {"i": 0}

    def step():
        state["i"] += 1
        return sess.run(mean, feed_dict={x: batches[state["i"] % len(batches)]})

    _warm(step, 20)

    def measure(quick):
        ts = call_times(step, 100 if quick else 300)
        return {"w4.p50_ms": percentile(ts, 50) * 1e3, "w4.p90_ms": percentile(ts, 90) * 1e3}

    return measure


# -- W7: local ops in a local Session -------------------------------------------------------
ELEMENTWISE_N = 10_000_000


def setup_local_ops(tf, env):
    g = tf.Graph()
    with g.as_default():
        a = tf.Variable(tf.random_uniform([1024, 1024]), name="a")
        b = tf.Variable(tf.random_uniform([1024, 1024]), name="b")
        product = tf.matmul(a, b)
        u, v, w = (tf.Variable(tf.random_uniform([ELEMENTWISE_N], -1.0, 1.0), name=nm)
                   for nm in ("u", "v", "w"))
        fused = tf.nn.relu(u * v + w) * 0.5
        x = tf.constant(2)
        y = x + 300
        init = tf.global_variables_initializer()
    sess = env.session(g)
    sess.run(init)
    a_np, b_np, u_np, v_np, w_np = sess.run([a, b, u, v, w])
    steps = {
        "w7.matmul_ms": lambda: sess.run(product),
        "w7.matmul_ms@numpy": lambda: np.matmul(a_np, b_np),
        "w7.elementwise_ms": lambda: sess.run(fused),
        "w7.elementwise_ms@numpy": lambda: np.maximum(u_np * v_np + w_np, 0) * np.float32(0.5),
    }
    for fn in steps.values():
        _warm(fn, 3)
    tiny = lambda: sess.run(y)  # noqa: E731
    _warm(tiny, 50)

    def measure(quick):
        reps = 10 if quick else 20
        out = {k: statistics.median(call_times(fn, reps)) * 1e3 for k, fn in steps.items()}
        out["w7.tiny_step_us"] = percentile(call_times(tiny, 500 if quick else 2000), 50) * 1e6
        return out

    return measure


def setup_local_server_step(tf, env):
    """The tiny step through a local server (TF1's create_local_server + Session(target))."""
    server = tf.train.Server.create_local_server()
    if hasattr(server, "stop"):
        env.on_close(server.stop)
    g = tf.Graph()
    with g.as_default():
        y = tf.constant(2) + 300
    sess = env.session(g, server.target)
    tiny = lambda: sess.run(y)  # noqa: E731
    _warm(tiny, 50)

    def measure(quick):
        return {"w7.tiny_server_step_us": percentile(call_times(tiny, 300 if quick else 1000), 50) * 1e6}

    return measure


def setup_transfer_tcp(tf, env):
    """W3 between tasks that share no memory (as on two hosts): dtf's TCP path."""
    return setup_transfer(tf, env, tcp_only=True, sizes=TCP_MIB)


from bench.input_pipeline import setup_input_pipeline  # noqa: E402

SETUPS = {
    "W2": setup_cross_task,
    "W3": setup_transfer,
    "W3t": setup_transfer_tcp,
    "W4": setup_fed_mean,
    "W7": setup_local_ops,
    "W7s": setup_local_server_step,
    "W8": setup_input_pipeline,
}


def _add_control_flow():
    from bench.control_flow import setup_control_flow  # it imports nothing of this module

    SETUPS["W9"] = setup_control_flow


_add_control_flow()

from bench.models import MODEL_SETUPS  # noqa: E402  (M1-M3: model training steps)

SETUPS.update(MODEL_SETUPS)
