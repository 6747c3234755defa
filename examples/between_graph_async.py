"""Between-graph replication, asynchronous training: one ps task, N worker tasks.

By hand, one process per task (each starts its own tf.train.Server):

    python examples/between_graph_async.py --ps_hosts=localhost:2222 \
        --worker_hosts=localhost:2223,localhost:2224 --job_name=ps --task_index=0
    python examples/between_graph_async.py ... --job_name=worker --task_index=0
    python examples/between_graph_async.py ... --job_name=worker --task_index=1

Under TF_CONFIG (e.g. ``dtf run examples/between_graph_async.py``) the cluster's servers
are already running: each worker replica is a client of its own task's server, and a ps
replica has nothing to do.

Worker 0 is the chief: it initializes (or restores) the model and writes checkpoints to
--checkpoint_dir. Every worker trains until the global step reaches --last_step.
"""
import argparse
import os
import sys
import time

import numpy as np

import dtf as tf


def build_model(cluster, task_index):
    """A linear regression y = 3x + 2 on random batches; returns (train_op, loss, global_step)."""
    with tf.device(tf.train.replica_device_setter(
            worker_device=f"/job:worker/task:{task_index}", cluster=cluster)):
        global_step = tf.train.get_or_create_global_step()
        x = tf.random_uniform([32, 1], seed=task_index + 1)
        y = 3.0 * x + 2.0
        w = tf.Variable(tf.zeros([1, 1]), name="w")
        b = tf.Variable(tf.zeros([1]), name="b")
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y), name="loss")
        tf.summary.scalar("loss", loss)
        train_op = tf.train.GradientDescentOptimizer(0.2).minimize(loss, global_step=global_step)
    return train_op, loss, global_step


def resolve_task(flags):
    """(cluster spec, job name, task index, session master or None to start a server)."""
    if os.environ.get("TF_CONFIG"):
        resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
        return resolver.cluster_spec(), resolver.task_type, resolver.task_id, resolver.master()
    cluster = tf.train.ClusterSpec({"ps": flags.ps_hosts.split(","),
                                    "worker": flags.worker_hosts.split(",")})
    return cluster, flags.job_name, flags.task_index, None


class StartingStep(tf.train.SessionRunHook):
    """Remembers the global step when the session was created (to explain a worker that
    had nothing left to do)."""

    def begin(self):
        self._global_step = tf.train.get_global_step()
        self.step = None

    def after_create_session(self, session, coord):
        self.step = int(session.run(self._global_step))


def finished_checkpoint(flags):
    """The global step of the latest checkpoint in --checkpoint_dir when it already reached
    --last_step (a second run with the same directory has nothing to train), else None."""
    path = tf.train.latest_checkpoint(flags.checkpoint_dir)
    if path is None:
        return None
    step = int(tf.train.load_variable(path, "global_step"))
    return step if step >= flags.last_step else None


def train(flags, cluster, task_index, master):
    is_chief = task_index == 0
    # Every worker that can see the directory checks (on one host, all of them): otherwise
    # the others would train on whatever the ps tasks still hold while the chief declines.
    done = finished_checkpoint(flags)
    if done is not None:
        print(f"worker {task_index}: checkpoint in {flags.checkpoint_dir} is already at step {done} "
              f">= last step {flags.last_step}; nothing to train: pass --checkpoint_dir or delete it",
              flush=True)
        return
    train_op, loss, global_step = build_model(cluster, task_index)
    started = StartingStep()
    hooks = [tf.train.StopAtStepHook(last_step=flags.last_step), started]
    step, loss_value, local_steps = None, None, 0
    with tf.train.MonitoredTrainingSession(
            master=master, is_chief=is_chief, checkpoint_dir=flags.checkpoint_dir,
            hooks=hooks, save_checkpoint_steps=flags.save_checkpoint_steps,
            max_wait_secs=flags.max_wait_secs) as mon_sess:
        while not mon_sess.should_stop():
            _, loss_value, step = mon_sess.run([train_op, loss, global_step])
            local_steps += 1
            if flags.step_delay:
                time.sleep(flags.step_delay)
    if local_steps == 0:
        step = started.step
        # The parameter servers keep their variables from one session to the next, as TF's
        # do: a worker whose session is ready before the chief has re-initialized (or
        # restored) them reads the global step of an earlier run and stops at once.
        print(f"worker {task_index} did no step: the global step was already {step} >= last "
              f"step {flags.last_step} when it started (another worker finished the training, or "
              "the ps tasks still hold the variables of an earlier run: `dtf down && dtf up` "
              "starts them afresh)", flush=True)
    else:
        print(f"worker {task_index} done after {local_steps} local steps: global step {step}, "
              f"loss {loss_value}", flush=True)
    if is_chief:
        final = int(tf.train.load_variable(flags.checkpoint_dir, "global_step"))
        print(f"final global step {final}", flush=True)


def main(flags, train_fn=train):
    """Serves a ps task, or runs ``train_fn(flags, cluster, task_index, master)`` on a worker."""
    cluster, job_name, task_index, master = resolve_task(flags)
    if job_name == "ps":
        if master is not None:
            print("ps task: served by the running cluster; nothing to do", flush=True)
            return 0
        server = tf.train.Server(cluster, job_name="ps", task_index=task_index)
        print(f"ps {task_index} serving on {server.target}", flush=True)
        server.join()
        return 0
    if master is None:
        master = tf.train.Server(cluster, job_name="worker", task_index=task_index).target
    np.random.seed(task_index)
    train_fn(flags, cluster, task_index, master)
    return 0


def parse_flags(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ps_hosts", default="", help="Comma-separated list of hostname:port pairs")
    p.add_argument("--worker_hosts", default="", help="Comma-separated list of hostname:port pairs")
    p.add_argument("--job_name", default="", help="One of 'ps', 'worker'")
    p.add_argument("--task_index", type=int, default=0, help="Index of task within the job")
    p.add_argument("--checkpoint_dir", default="/tmp/train_logs")
    p.add_argument("--last_step", type=int, default=1000)
    p.add_argument("--save_checkpoint_steps", type=int, default=100)
    p.add_argument("--max_wait_secs", type=float, default=7200)
    p.add_argument("--step_delay", type=float, default=0.0, help="Seconds to sleep after each step")
    flags = p.parse_args(argv)
    if not os.environ.get("TF_CONFIG") and not (flags.ps_hosts and flags.worker_hosts and flags.job_name):
        p.error("give --ps_hosts, --worker_hosts and --job_name, or set TF_CONFIG")
    return flags


if __name__ == "__main__":
    import logging

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    sys.exit(main(parse_flags(sys.argv[1:])))
