"""word2vec skip-gram step, dtf beside TensorFlow: vocabulary 100,000 x 128, batch 128,
nce_loss with 64 negatives, the embedding table and NCE weights partitioned over 2 ps
tasks, 2 workers training asynchronously (between-graph). The same code runs on both.

    .venv/bin/python -m bench.word2vec [--steps 400] [--rounds 1] [--tf-python PATH] [--no-tf]

Prints, per implementation, examples/s over the window from the first worker's start to
the last one's end, and each ps task's resident memory (VmRSS) when idle and after
training, next to the variable bytes it holds. The issue's goals, printed as ratios: dtf's
examples/s at least 2x TensorFlow's, and each ps task's memory growth at most 1.2x the
bytes of the variables placed on it, where growth is the task's VmRSS after training
minus its VmRSS when idle (started, before any graph arrived). A worker: ``python -m bench.word2vec --worker
--impl dtf|tf --cluster_spec=... --task_index=N --steps N`` (prints @@READY, waits for a
line on stdin, trains, prints @@RESULT {json}).
"""
from __future__ import annotations

import json
import os
import re
import sys
import time

import numpy as np

VOCABULARY, DIM, BATCH, NEGATIVES, PS_TASKS, WORKERS = 100_000, 128, 128, 64, 2, 2


def build(tf, task_index, cluster):
    """The skip-gram model under replica_device_setter; (train_op, global_step, feeds)."""
    with tf.device(tf.train.replica_device_setter(
            worker_device=f"/job:worker/task:{task_index}", cluster=cluster)):
        global_step = tf.train.get_or_create_global_step()
        inputs = tf.placeholder(tf.int64, [BATCH])
        labels = tf.placeholder(tf.int64, [BATCH, 1])
        shards = tf.fixed_size_partitioner(PS_TASKS)
        emb = tf.get_variable("embeddings", [VOCABULARY, DIM], partitioner=shards,
                              initializer=tf.random_uniform_initializer(-1.0, 1.0))
        nce_w = tf.get_variable("nce_weights", [VOCABULARY, DIM], partitioner=shards,
                                initializer=tf.truncated_normal_initializer(stddev=DIM ** -0.5))
        nce_b = tf.get_variable("nce_biases", [VOCABULARY], initializer=tf.zeros_initializer())
        embed = tf.nn.embedding_lookup(emb, inputs, partition_strategy="div")
        loss = tf.reduce_mean(tf.nn.nce_loss(nce_w, nce_b, labels, embed, NEGATIVES, VOCABULARY,
                                             partition_strategy="div"))
        train_op = tf.train.GradientDescentOptimizer(1.0).minimize(loss, global_step=global_step)
    return train_op, global_step, inputs, labels


def worker(args):
    from bench.impl import load
    from bench.tf_server import parse_cluster
    from bench.train_worker import async_session

    tf = load(args.impl)
    cluster = tf.train.ClusterSpec(parse_cluster(args.cluster_spec))
    server = tf.train.Server(cluster, job_name="worker", task_index=args.task_index)
    train_op, global_step, inputs, labels = build(tf, args.task_index, cluster)
    ps_bytes = variable_bytes_per_ps(tf)
    config = tf.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{args.task_index}"])
    sess = async_session(tf, server, config, args.task_index == 0)
    rng = np.random.default_rng(args.task_index)
    batches = [(rng.integers(0, VOCABULARY, BATCH), rng.integers(0, VOCABULARY, (BATCH, 1)))
               for _ in range(16)]
    print("@@READY", flush=True)
    sys.stdin.readline()
    start, local_steps, step = time.time(), 0, 0
    while step < args.steps:
        centers, contexts = batches[local_steps % len(batches)]
        _, step = sess.run([train_op, global_step], {inputs: centers, labels: contexts})
        local_steps += 1
    end = time.time()
    print("@@RESULT " + json.dumps({"start": start, "end": end, "local_steps": local_steps,
                                    "ps_bytes": ps_bytes}), flush=True)
    os._exit(0)


def variable_bytes_per_ps(tf):
    """The bytes of the variables placed on each ps task (tables, biases, global step)."""
    out = [0] * PS_TASKS
    for v in tf.global_variables():
        m = re.search(r"/job:ps/(?:replica:\d+/)?task:(\d+)", v.device)
        if m:
            out[int(m.group(1))] += int(np.prod(v.shape.as_list())) * v.dtype.base_dtype.size
    return out


def run_once(impl, python, steps):
    from bench.training import run_between_graph

    results, idle, trained, notes = run_between_graph(
        impl, python, ["bench.word2vec", "--worker", f"--impl={impl}", f"--steps={steps}"],
        PS_TASKS, WORKERS, timeout_s=600.0, grace_s=30.0, ready_timeout_s=300.0)
    if not results:
        raise RuntimeError(f"no {impl} worker finished: {notes}")
    window = max(r["end"] for r in results) - min(r["start"] for r in results)
    examples = sum(r["local_steps"] for r in results) * BATCH
    return {"examples_s": examples / window, "ps_rss_idle_mb": idle,
            "ps_rss_trained_mb": trained, "ps_variable_mb": [b / 2 ** 20 for b in results[0]["ps_bytes"]],
            "notes": notes}


def report(impl, out):
    """One line per run: speed, raw RSS, and each ps task's growth against its variables."""
    growth = [t - i for i, t in zip(out["ps_rss_idle_mb"], out["ps_rss_trained_mb"])]
    ratios = [g / b if b else float("nan") for g, b in zip(growth, out["ps_variable_mb"])]
    print(f"{impl}: {out['examples_s']:.0f} examples/s; ps VmRSS idle "
          f"{[round(m) for m in out['ps_rss_idle_mb']]} MiB, after training "
          f"{[round(m) for m in out['ps_rss_trained_mb']]} MiB; growth "
          f"{[round(g, 1) for g in growth]} MiB for variables of "
          f"{[round(b, 1) for b in out['ps_variable_mb']]} MiB: "
          f"{[round(r, 2) for r in ratios]}x (goal <= 1.2x)"
          + (f"; notes: {out['notes']}" if out["notes"] else ""), flush=True)


def main(argv=None):
    from bench.training import between_graph_parser, implementations

    args = between_graph_parser(__doc__, 400, "global steps per run").parse_args(argv)
    if args.worker:
        return worker(args)
    impls = implementations(args, sys.executable)
    print("ps memory growth = VmRSS after training - VmRSS idle (task started, before any "
          "graph arrived), beside the bytes of the variables placed on that task")
    speeds = {impl: [] for impl in impls}
    for r in range(args.rounds):
        for impl, python in (impls.items() if r % 2 == 0 else reversed(impls.items())):
            out = run_once(impl, python, args.steps)
            speeds[impl].append(out["examples_s"])
            report(impl, out)
    if speeds.get("tf"):
        ratios = [d / t for d, t in zip(speeds["dtf"], speeds["tf"])]
        print(f"dtf / TensorFlow examples/s per round: {[round(x, 2) for x in ratios]} (goal >= 2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
