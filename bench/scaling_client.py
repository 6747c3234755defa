"""The client of the fan-out/fan-in step of ``bench.scaling`` (runs under either
implementation's Python): ``python -m bench.scaling_client --impl dtf|tf
--cluster_spec='worker|h:p;h:p;...' --steps 300``.

One step feeds a small vector x, computes ``x * (i + 1) + 1`` on each of the N worker tasks
(fan-out) and sums the N results on task 0 (fan-in), fetched by this client through task
0's master. It checks the sum once, prints ``@@READY`` after the warm-up steps, waits for a
line on stdin, times ``--steps`` steps and prints ``@@RESULT {json}``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--impl", choices=("dtf", "tf"), required=True)
    p.add_argument("--cluster_spec", required=True)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--width", type=int, default=16, help="float32 elements per tensor")
    args = p.parse_args(argv)
    from bench.impl import load
    from bench.tf_server import parse_cluster

    tf = load(args.impl)
    workers = parse_cluster(args.cluster_spec)["worker"]
    n = len(workers)
    x = tf.placeholder(tf.float32, [args.width], name="x")
    parts = []
    for i in range(n):
        with tf.device(f"/job:worker/task:{i}"):
            parts.append(x * float(i + 1) + 1.0)
    with tf.device("/job:worker/task:0"):
        total = tf.add_n(parts) if n > 1 else tf.identity(parts[0])
    value = np.arange(args.width, dtype=np.float32)
    expected = value * (n * (n + 1) / 2) + n
    with tf.Session(f"grpc://{workers[0]}") as sess:
        got = sess.run(total, {x: value})
        if not np.allclose(got, expected):
            raise SystemExit(f"wrong fan-in sum over {n} tasks: {got[:4]}... != {expected[:4]}...")
        for _ in range(args.warmup):
            sess.run(total, {x: value})
        print("@@READY", flush=True)
        sys.stdin.readline()
        times = []
        cpu0, start = time.process_time(), time.perf_counter()
        for _ in range(args.steps):
            t0 = time.perf_counter()
            sess.run(total, {x: value})
            times.append(time.perf_counter() - t0)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu0
    times.sort()
    print("@@RESULT " + json.dumps({
        "p50_ms": 1e3 * times[len(times) // 2], "p90_ms": 1e3 * times[int(len(times) * 0.9)],
        "steps_s": args.steps / wall, "client_cpu_ms_per_step": 1e3 * cpu / args.steps}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
