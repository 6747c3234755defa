"""One worker of the W5/W6 training benchmark (between-graph replication, as TF1 tutorials
do it): ``python -m bench.train_worker --impl dtf|tf --cluster_spec=... --task_index=N
--mode async|sync --steps 2000``.

The worker hosts its own server, builds the MLP 64-128-10 with ``replica_device_setter``,
prints ``@@READY`` once its session can train, waits for a line on stdin, trains until the
global step reaches ``--steps`` and prints ``@@RESULT {json}`` with its wall-clock window.
The same code runs under dtf and TensorFlow.

``--warmup N`` measures a long job's steady state instead of its first steps: the window
opens after this worker's first N steps (and the run lasts N steps more per worker), and a
dtf worker has its Numba loops loaded before it reports ready. In a job of more than a few
thousand steps they load anyway (dtf.kernels.cpu.jit_loading: the numpy stand-ins serve a
process's first ~0.5 s of kernel time), so a 2,000-step window otherwise times the stand-ins.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

BATCH = 64
LEARNING_RATE = 0.05


def build_mlp(tf, sizes=(64, 128, 10)):
    """Placeholders, loss and global step of an MLP with ReLU hidden layers."""
    x = tf.placeholder(tf.float32, [None, sizes[0]], name="x")
    labels = tf.placeholder(tf.int64, [None], name="labels")
    h = x
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        w = tf.Variable(tf.random_normal([n_in, n_out], stddev=0.1, seed=i + 1), name=f"w{i}")
        b = tf.Variable(tf.zeros([n_out]), name=f"b{i}")
        h = tf.matmul(h, w) + b
        if i < len(sizes) - 2:
            h = tf.nn.relu(h)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=h))
    return x, labels, loss, tf.train.get_or_create_global_step()


def async_session(tf, server, config, is_chief, init_timeout_s=120.0):
    """A plain session: the chief initializes, the others wait until the ps is ready."""
    init = tf.global_variables_initializer()
    uninitialized = tf.report_uninitialized_variables()
    sess = tf.Session(server.target, config=config)
    if is_chief:
        sess.run(init)
    deadline = time.monotonic() + init_timeout_s
    while len(sess.run(uninitialized)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return sess


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--impl", choices=("dtf", "tf"), required=True)
    p.add_argument("--cluster_spec", required=True)
    p.add_argument("--task_index", type=int, required=True)
    p.add_argument("--mode", choices=("async", "sync"), required=True)
    p.add_argument("--steps", type=int, default=2000)
    p.add_argument("--warmup", type=int, default=0, help="steps before the window opens")
    args = p.parse_args(argv)
    from bench.impl import load
    from bench.tf_server import parse_cluster

    tf = load(args.impl)
    jobs = parse_cluster(args.cluster_spec)
    n_workers = len(jobs["worker"])
    cluster = tf.train.ClusterSpec(jobs)
    server = tf.train.Server(cluster, job_name="worker", task_index=args.task_index)
    is_chief = args.task_index == 0
    # The global step the run ends at: async workers each add their warm-up steps to it,
    # sync ones add one global step per warm-up step together.
    last_step = args.steps + args.warmup * (n_workers if args.mode == "async" else 1)
    with tf.device(tf.train.replica_device_setter(
            worker_device=f"/job:worker/task:{args.task_index}", cluster=cluster)):
        x, labels, loss, global_step = build_mlp(tf)
        opt = tf.train.GradientDescentOptimizer(LEARNING_RATE)
        if args.mode == "sync":
            opt = tf.train.SyncReplicasOptimizer(opt, replicas_to_aggregate=n_workers,
                                                 total_num_replicas=n_workers)
        train_op = opt.minimize(loss, global_step=global_step)
    # Only the ps and this worker: TF would otherwise wait for every worker to be up.
    config = tf.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{args.task_index}"])
    if args.mode == "sync":
        hooks = [opt.make_session_run_hook(is_chief),
                 tf.train.StopAtStepHook(last_step=last_step)]
        sess = tf.train.MonitoredTrainingSession(
            master=server.target, is_chief=is_chief, hooks=hooks, save_checkpoint_secs=None,
            save_summaries_steps=None, save_summaries_secs=None, log_step_count_steps=0,
            config=config)
        done = sess.should_stop
    else:
        sess = async_session(tf, server, config, is_chief)
        done = None
    rng = np.random.default_rng(args.task_index)
    feed = {x: rng.standard_normal((BATCH, 64)).astype(np.float32),
            labels: rng.integers(0, 10, BATCH)}
    if args.warmup and args.impl == "dtf":
        from dtf.kernels.cpu import jit_loading

        jit_loading.wait(120)
    print("@@READY", flush=True)
    sys.stdin.readline()
    start, cpu0 = time.time(), time.process_time()
    local_steps, step, start_step = 0, 0, 0
    while not (done() if done else step >= last_step):
        _, step = sess.run([train_op, global_step], feed_dict=feed)
        local_steps += 1
        if local_steps == args.warmup:  # the window opens
            start, cpu0, start_step = time.time(), time.process_time(), int(step)
    end, cpu_s = time.time(), time.process_time() - cpu0  # this worker's CPU while training
    print("@@RESULT " + json.dumps({"start": start, "end": end,
                                    "local_steps": local_steps - min(args.warmup, local_steps),
                                    "start_global_step": start_step,
                                    "global_step": int(step), "cpu_s": cpu_s}), flush=True)
    # Leave at once: closing sessions is not what is measured, and TF1's sync chief may wait
    # out stop_grace_period_secs at close.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
