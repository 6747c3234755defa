"""Cost of one training step of the W5/W6 MLP (64-128-10, batch 64): ``python -m
bench.train_step_profile [--steps 2000] [--ps] [--ops] [--cprofile] [--cpu-profile]``.

Builds the model of bench/train_worker.py in a local ``tf.Session()`` and prints the median
wall time and thread CPU of ``sess.run(train_op, feed)``. ``--ps`` puts the variables on a
parameter server of their own (a ``dtf server`` on loopback, as W5 has it) and runs the
same step from this process as worker 0 through its own server, so the two lines side by
side are what between-graph placement adds to a step. ``--ops`` adds the time per op type
from the step stats of traced runs (``RunOptions(trace_level=FULL_TRACE)``); ``--cprofile``
adds the functions the untraced steps spend their time in, ``--cpu-profile`` the same
timed in thread CPU (so waits for the ps drop out; the profiler's own cost inflates both).
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time
from collections import defaultdict

import numpy as np

from bench.cluster import Cluster
from bench.train_worker import BATCH, LEARNING_RATE, build_mlp


def build(tf, cluster=None):
    """The session, the train op and a fixed feed, variables initialized. ``cluster``
    (bench.cluster.Cluster with a running ps and a worker address): the variables go to
    the ps and the session runs on a server for worker 0 in this process."""
    target, setter = "", None
    if cluster is not None:
        spec = tf.train.ClusterSpec(cluster.jobs)
        target = tf.train.Server(spec, job_name="worker", task_index=0).target
        setter = tf.train.replica_device_setter(worker_device="/job:worker/task:0", cluster=spec)
    with tf.device(setter):
        x, labels, loss, global_step = build_mlp(tf)
        train_op = tf.train.GradientDescentOptimizer(LEARNING_RATE).minimize(
            loss, global_step=global_step)
    sess = tf.Session(target)
    sess.run(tf.global_variables_initializer())
    rng = np.random.default_rng(0)
    feed = {x: rng.standard_normal((BATCH, 64)).astype(np.float32),
            labels: rng.integers(0, 10, BATCH)}
    return sess, train_op, feed


def step_times(sess, train_op, feed, steps):
    """(wall, cpu) seconds per ``sess.run(train_op, feed)``, one entry per step. CPU time
    is the steadier number on a shared machine: it leaves out time spent descheduled."""
    wall, cpu = [], []
    for _ in range(steps):
        t0, c0 = time.perf_counter(), time.thread_time()
        sess.run(train_op, feed)
        cpu.append(time.thread_time() - c0)
        wall.append(time.perf_counter() - t0)
    return wall, cpu


def op_times(tf, sess, train_op, feed, steps):
    """{op type: (total microseconds per step, kernels per step)} from traced steps."""
    total = defaultdict(float)
    count = defaultdict(int)
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
    for _ in range(steps):
        meta = tf.RunMetadata()
        sess.run(train_op, feed, options=options, run_metadata=meta)
        for dev in meta.step_stats.dev_stats:
            for s in dev.node_stats:
                op = s.timeline_label[len(s.node_name) + 3:-2]  # "name = Op()"
                total[op] += s.op_end_rel_micros
                count[op] += 1
    return {op: (total[op] / steps, count[op] / steps) for op in total}


def print_ops(per_op):
    print(f"{'op type':<40} {'us/step':>8} {'kernels':>8}")
    for op, (us, n) in sorted(per_op.items(), key=lambda kv: -kv[1][0]):
        print(f"{op:<40} {us:8.1f} {n:8.0f}")
    print(f"{'total (kernels only)':<40} {sum(us for us, _ in per_op.values()):8.1f} "
          f"{sum(n for _, n in per_op.values()):8.0f}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--ops", action="store_true", help="time per op type (traced steps)")
    p.add_argument("--cprofile", action="store_true", help="cProfile of untraced steps")
    p.add_argument("--cpu-profile", action="store_true",
                   help="cProfile of untraced steps, timed in thread CPU")
    p.add_argument("--ps", action="store_true",
                   help="variables on a ps task of their own, the step run as worker 0")
    args = p.parse_args(argv)
    cluster = None
    if args.ps:
        cluster = Cluster("dtf", {"ps": 1, "worker": 1}).start_jobs("ps")
    try:
        run(args, cluster)
    finally:
        if cluster is not None:
            cluster.stop()


def run(args, cluster):
    import dtf as tf

    from dtf.kernels.cpu import jit_loading

    sess, train_op, feed = build(tf, cluster)
    step_times(sess, train_op, feed, 200)  # warm-up: plan compiled, caches filled
    # Until Numba's loops are loaded (in the background) kernels run numpy fallbacks:
    # measure the steady state only.
    jit_loading.wait(60.0)
    step_times(sess, train_op, feed, 200)
    wall, cpu = step_times(sess, train_op, feed, args.steps)
    print(f"median step: {statistics.median(wall) * 1e6:.1f} us wall "
          f"(p10 {np.percentile(wall, 10) * 1e6:.1f}, p90 {np.percentile(wall, 90) * 1e6:.1f}), "
          f"{statistics.median(cpu) * 1e6:.1f} us cpu, {args.steps} steps"
          + (" (variables on a ps task)" if cluster is not None else ""))
    if args.ops:
        print_ops(op_times(tf, sess, train_op, feed, args.steps))
    for wanted, timer in ((args.cprofile, None), (args.cpu_profile, time.thread_time)):
        if wanted:
            prof = cProfile.Profile() if timer is None else cProfile.Profile(timer)
            prof.runcall(step_times, sess, train_op, feed, args.steps)
            pstats.Stats(prof).sort_stats("tottime").print_stats(30)


if __name__ == "__main__":
    main()
