"""GPU vs CPU: float32 matmul (1024 and 4096), a 10M-element elementwise chain and an MLP
training step, each through tf.Session() with the ops pinned to /gpu:0 or /cpu:0.

Usage: python bench/gpu_bench.py [--repeat N]. Needs a real CUDA device: under Numba's
simulator (NUMBA_ENABLE_CUDASIM=1) or without a GPU it refuses with a message.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import dtf as tf


def _refuse_without_gpu():
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        sys.exit("gpu_bench: NUMBA_ENABLE_CUDASIM=1 selects Numba's CUDA simulator; timings would be "
                 "meaningless. Run it on a machine with an NVIDIA GPU without that variable.")
    from dtf.runtime.devices import gpu_count

    if gpu_count() == 0:
        sys.exit("gpu_bench: no CUDA device is available to Numba (numba.cuda.is_available() is "
                 "False); nothing to compare.")


def _time(sess, fetch, feed, repeat):
    sess.run(fetch, feed)  # compile and warm up
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        sess.run(fetch, feed)
        best = min(best, time.perf_counter() - t0)
    return best


def _matmul(device, n):
    a = tf.placeholder(tf.float32, [n, n])
    with tf.device(device):
        c = tf.reduce_sum(tf.matmul(a, a))
    return c, {a: np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)}


def _chain(device, n=10_000_000):
    x = tf.placeholder(tf.float32, [n])
    with tf.device(device):
        y = tf.reduce_sum(tf.nn.relu(tf.tanh(x * 1.5 + 0.25) - tf.sigmoid(x)) * x)
    return y, {x: np.random.default_rng(1).standard_normal(n, dtype=np.float32)}


def _mlp(device, batch=256, sizes=(784, 512, 512, 10)):
    rng = np.random.default_rng(2)
    x = tf.placeholder(tf.float32, [batch, sizes[0]])
    y = tf.placeholder(tf.int32, [batch])
    with tf.device(device):
        h = x
        for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:])):
            w = tf.Variable(rng.standard_normal((m, n), dtype=np.float32) * 0.05, name=f"w{i}")
            b = tf.Variable(np.zeros(n, np.float32), name=f"b{i}")
            h = tf.matmul(h, w) + b
            if i < len(sizes) - 2:
                h = tf.nn.relu(h)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=h))
        train = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
    feed = {x: rng.standard_normal((batch, sizes[0]), dtype=np.float32),
            y: rng.integers(0, sizes[-1], batch).astype(np.int32)}
    return train, feed


CASES = [("matmul 1024x1024", lambda d: _matmul(d, 1024)), ("matmul 4096x4096", lambda d: _matmul(d, 4096)),
         ("elementwise chain 10M", _chain), ("MLP training step (256x784-512-512-10)", _mlp)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    _refuse_without_gpu()
    config = tf.ConfigProto(allow_soft_placement=True)
    print(f"{'case':42s} {'CPU s':>10s} {'GPU s':>10s} {'speedup':>8s}")
    for name, build in CASES:
        times = {}
        for device in ("/cpu:0", "/gpu:0"):
            tf.reset_default_graph()
            fetch, feed = build(device)
            with tf.Session(config=config) as sess:
                sess.run(tf.global_variables_initializer())
                times[device] = _time(sess, fetch, feed, args.repeat)
        cpu, gpu = times["/cpu:0"], times["/gpu:0"]
        print(f"{name:42s} {cpu:10.4f} {gpu:10.4f} {cpu / gpu:8.2f}x", flush=True)


if __name__ == "__main__":
    main()
