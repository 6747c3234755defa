"""What each layer of a between-graph training step costs, in thread CPU and without a
profiler: ``python -m bench.step_layers [--steps 4000]``.

Runs bench.train_worker's MLP step as worker 0 with its variables on a ps task of its own
(as ``bench.train_step_profile --ps`` does), and wraps the methods of LAYERS, on this side
and in the ps's process, so that each call records the thread CPU it took. Prints each
one's calls per step, median CPU per call and CPU per step (the mean): on the worker, per
step of the training thread; on the ps, per global step of its I/O thread. Wrapped calls nest (a median of a
layer includes those of the layers it calls), and each wrapper adds about a microsecond.

cProfile inflates these layers 3-5x (its cost per Python call is a large share of theirs)
and spreads the time of C calls over their callers; these medians are what the layers
cost in a real step. Run with ``DTF_SPIN_US=0``, the waits before each message are
blocking polls, so no layer's CPU includes a spin.
"""
from __future__ import annotations

import argparse
import atexit
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from bench.cluster import REPO, Cluster, quiet_env, wait_for_output

# (module, class, method) of the layers timed on the worker (the training thread) and on
# the ps (its I/O thread), outermost first.
WORKER_LAYERS = [
    ("dtf.client.remote", "RemoteBackend", "run"),
    ("dtf.runtime.master", "MasterSession", "run_step"),
    ("dtf.runtime.blocking_step", "BlockingStep", "run"),
    ("dtf.wire.client", "Client", "send"),
    ("dtf.runtime.worker", "Worker", "run_graph"),
    ("dtf.runtime.executor", "_DataflowRun", "advance"),
    ("dtf.runtime.blocking_step", "_ReplyPump", "wait"),
    ("dtf.runtime.executor", "Plan", "_outputs"),
    ("dtf.wire.client", "Client", "push"),
    ("dtf.wire.client", "Client", "receive"),
]
PS_LAYERS = [
    ("dtf.wire.server", "ServerLoop", "_serve_lane"),
    ("dtf.wire.server", "ServerLoop", "_on_message"),
    ("dtf.wire.server", "ServerLoop", "_run_soon"),
    ("dtf.runtime.worker", "Worker", "start_graph"),
    ("dtf.runtime.worker", "Worker", "tensor_push"),
    ("dtf.runtime.executor", "_DataflowRun", "advance"),
]
# Both sides: the codec and the lane.
WIRE_LAYERS = [
    ("dtf.wire.codec", "_ThreadCodec", "encode"),
    ("dtf.wire.codec", "_ThreadCodec", "decode_hooked"),
    ("dtf.wire.lane", "Lane", "send"),
    ("dtf.wire.lane", "Lane", "fill"),
]


def instrument(layers) -> dict:
    """Wraps each layer's method; returns {label: [thread CPU s of each call]}."""
    calls: dict = {}
    clock = time.thread_time
    for module, cls_name, method in layers:
        cls = getattr(importlib.import_module(module), cls_name)
        label = f"{cls_name}.{method}"
        record = calls.setdefault(label, [])
        inner = getattr(cls, method)

        def timed(*args, _inner=inner, _record=record, **kwargs):
            t0 = clock()
            try:
                return _inner(*args, **kwargs)
            finally:
                _record.append(clock() - t0)

        setattr(cls, method, timed)
    return calls


def summary(calls: dict, per: int) -> list:
    """(label, calls per step, median us per call, us per step) of each layer that ran,
    over the second half of its calls (the first is warm-up) and ``per`` steps."""
    rows = []
    for label, times in calls.items():
        kept = times[len(times) // 2:]
        if kept:
            rows.append((label, len(kept) / per, statistics.median(kept) * 1e6,
                         sum(kept) / per * 1e6))
    return rows


def serve_ps(out_path, server_argv):
    """The ps task: a dtf server whose layers are timed, written to ``out_path`` at exit."""
    calls = instrument(PS_LAYERS + WIRE_LAYERS)

    def write():
        # One RunGraph per global step: the steps in the half of the calls summary keeps.
        steps = len(calls.get("Worker.start_graph", ())) // 2
        with open(out_path, "w") as f:
            json.dump(summary(calls, max(steps, 1)), f)

    atexit.register(write)
    from dtf.cli.app import main as dtf_main  # noqa: PLC0415 - the wrappers are in place

    sys.argv = ["dtf", "server", *server_argv]
    dtf_main()


def print_rows(title, rows):
    print(title)
    print(f"  {'layer':<28} {'calls':>6} {'median us':>10} {'us/step':>8}")
    for label, n, us, total in rows:
        print(f"  {label:<28} {n:6.2f} {us:10.1f} {total:8.1f}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=4000)
    p.add_argument("--serve-ps", metavar="OUT", help=argparse.SUPPRESS)
    args, rest = p.parse_known_args(argv)
    if args.serve_ps:
        return serve_ps(args.serve_ps, rest)
    import dtf as tf
    from dtf.kernels.cpu import jit_loading

    from bench import train_step_profile

    cluster = Cluster("dtf", {"ps": 1, "worker": 1})
    out_path = os.path.join(tempfile.mkdtemp(prefix="step-layers-"), "ps.json")
    log_path = os.path.join(cluster.log_dir, "ps-0.log")
    with open(log_path, "w") as log:
        ps = subprocess.Popen(
            [sys.executable, "-m", "bench.step_layers", "--serve-ps", out_path,
             f"--cluster_spec={cluster.flags_spec}", "--job_name=ps", "--task_index=0"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=REPO, env=quiet_env())
    cluster.procs.append(ps)
    try:
        wait_for_output(ps, log_path, "listening on", 60, "dtf task ps:0")
        sess, train_op, feed = train_step_profile.build(tf, cluster)
        train_step_profile.step_times(sess, train_op, feed, 300)
        jit_loading.wait(60.0)
        calls = instrument(WORKER_LAYERS + WIRE_LAYERS)
        # Twice the steps: summary keeps the second half.
        wall, cpu = train_step_profile.step_times(sess, train_op, feed, 2 * args.steps)
        cpu = cpu[args.steps:]
        worker_rows = summary(calls, args.steps)
    finally:
        cluster.stop()
    deadline = time.monotonic() + 10
    while not os.path.exists(out_path) and time.monotonic() < deadline:
        time.sleep(0.05)
    print(f"worker step: median {statistics.median(cpu) * 1e6:.1f} us of the training thread's "
          f"CPU, {args.steps} steps (spin {os.environ.get('DTF_SPIN_US', '250')} us)")
    print_rows("worker, per step (training thread):", worker_rows)
    if os.path.exists(out_path):
        with open(out_path) as f:
            print_rows("ps, per global step (I/O thread):", json.load(f))
    else:
        print("ps: its layers were not written (it did not exit cleanly)")


if __name__ == "__main__":
    main()
