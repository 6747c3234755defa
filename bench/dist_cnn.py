"""The deep-MNIST CNN (bench M1's model) trained between-graph on 1 ps + 2 workers,
asynchronously, dtf beside TensorFlow. The same code runs on both.

    .venv/bin/python -m bench.dist_cnn [--steps 200] [--rounds 1] [--tf-python PATH] [--no-tf]

The CNN's 3.3M parameters (13 MB) live on the ps task (``replica_device_setter``); every
step each worker reads all of them and sends back a gradient for each, so a step moves
about 13 MB each way per worker. Prints, per implementation, global steps/s over the window
from the first worker's start to the last one's end, and the ps task's RSS when idle and
after training. A worker: ``python -m bench.dist_cnn --worker --impl dtf|tf
--cluster_spec=... --task_index=N --steps N``.
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time


PS_TASKS, WORKERS = 1, 2


def worker(args):
    from bench.impl import load
    from bench.models import CNN_BATCH, _feeds, build_cnn
    from bench.tf_server import parse_cluster
    from bench.train_worker import async_session

    tf = load(args.impl)
    cluster = tf.train.ClusterSpec(parse_cluster(args.cluster_spec))
    server = tf.train.Server(cluster, job_name="worker", task_index=args.task_index)
    with tf.device(tf.train.replica_device_setter(
            worker_device=f"/job:worker/task:{args.task_index}", cluster=cluster)):
        global_step = tf.train.get_or_create_global_step()
        x, labels, _, train_op = build_cnn(tf)
        with tf.control_dependencies([train_op]):
            step_op = tf.assign_add(global_step, 1)
    config = tf.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{args.task_index}"])
    sess = async_session(tf, server, config, args.task_index == 0)
    feeds = _feeds(x, labels, (CNN_BATCH, 784), seed=1 + args.task_index)
    for i in range(3):  # kernels compiled and caches warm before the clock starts
        sess.run(step_op, feeds[i % len(feeds)])
    if args.impl == "dtf":
        from dtf.kernels.cpu import jit_loading

        jit_loading.wait(120.0)
    print("@@READY", flush=True)
    sys.stdin.readline()
    start, first_step = time.time(), int(sess.run(global_step))
    local_steps, step = 0, first_step
    while step < first_step + args.steps:
        step = sess.run(step_op, feeds[local_steps % len(feeds)])
        local_steps += 1
    end = time.time()
    print("@@RESULT " + json.dumps({"start": start, "end": end, "local_steps": local_steps,
                                    "global_steps": local_steps}), flush=True)
    os._exit(0)


def run_once(impl, python, steps):
    from bench.training import run_between_graph

    results, idle, trained, notes = run_between_graph(
        impl, python, ["bench.dist_cnn", "--worker", f"--impl={impl}", f"--steps={steps}"],
        PS_TASKS, WORKERS, timeout_s=900.0, ready_timeout_s=300.0)
    if not results:
        raise RuntimeError(f"no {impl} worker finished: {notes}")
    window = max(r["end"] for r in results) - min(r["start"] for r in results)
    return {"steps_s": sum(r["global_steps"] for r in results) / window,
            "ps_rss_idle_mib": idle, "ps_rss_trained_mib": trained, "notes": notes}


def main(argv=None):
    from bench.training import between_graph_parser, implementations

    args = between_graph_parser(__doc__, 200, "local steps per worker per run").parse_args(argv)
    if args.worker:
        return worker(args)
    impls = implementations(args, sys.executable)
    rates = {impl: [] for impl in impls}
    for r in range(args.rounds):
        # Alternate the order each round: whichever runs second meets a warmer machine.
        for impl, python in (impls.items() if r % 2 == 0 else reversed(impls.items())):
            out = run_once(impl, python, args.steps)
            rates[impl].append(out["steps_s"])
            print(f"{impl}: {out['steps_s']:.1f} global steps/s; ps RSS idle "
                  f"{[round(m) for m in out['ps_rss_idle_mib']]} MiB, after training "
                  f"{[round(m) for m in out['ps_rss_trained_mib']]} MiB"
                  + (f"; notes: {out['notes']}" if out["notes"] else ""), flush=True)
    if "tf" in rates:
        dtf_s, tf_s = statistics.median(rates["dtf"]), statistics.median(rates["tf"])
        print(f"median global steps/s: dtf {dtf_s:.1f}, TF {tf_s:.1f}: {dtf_s / tf_s:.2f}x TF")
    return 0


if __name__ == "__main__":
    sys.exit(main())
