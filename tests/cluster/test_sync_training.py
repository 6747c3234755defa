"""Synchronous training (SyncReplicasOptimizer) on real task processes: every worker
reaches the last step and exits promptly, and a worker that dies never leaves the others
hanging."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

import dtf as tf
from dtf.train.server import free_port
from tests.cluster.conftest import REPO

pytestmark = pytest.mark.cluster

EXAMPLE = os.path.join(REPO, "examples", "sync_training.py")
TOKEN_TIMEOUT_S = 3  # how long a worker waits for a sync token before failing


def _start(flags, *args):
    env = dict(os.environ, PYTHONUNBUFFERED="1", DTF_SYNC_TOKEN_TIMEOUT_S=str(TOKEN_TIMEOUT_S))
    env.pop("TF_CONFIG", None)
    env.pop("DTF_PROGRESS", None)
    return subprocess.Popen([sys.executable, EXAMPLE, *flags, *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _finish(proc, timeout):
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail(f"{proc.args} did not finish in {timeout} s:\n{out}")
    return proc.returncode, out


def _stop(procs):
    for p in procs:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
            p.wait(10)


def _global_step(ps):
    """The global step held by the ps task, read by a fresh client."""
    with tf.Graph().as_default():
        with tf.device("/job:ps/task:0"):
            gs = tf.train.get_or_create_global_step()
        with tf.Session(f"grpc://{ps}") as sess:
            return int(sess.run(gs))


def _wait_for_step(ps, step, procs, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if _global_step(ps) >= step:
                return
        except tf.errors.FailedPreconditionError:
            pass  # not initialized yet
        for p in procs:
            if p.poll() is not None:
                pytest.fail(f"{p.args} exited early:\n{p.communicate()[0]}")
        time.sleep(0.1)
    pytest.fail(f"global step did not reach {step} in {timeout} s")


@pytest.fixture
def cluster():
    ps, w0, w1, w2 = (f"127.0.0.1:{free_port()}" for _ in range(4))
    procs = []

    def start(num_workers, *args):
        flags = (f"--ps_hosts={ps}", f"--worker_hosts={','.join([w0, w1, w2][:num_workers])}")
        procs.append(_start(flags, "--job_name=ps"))
        workers = [_start(flags, "--job_name=worker", f"--task_index={i}", *args)
                   for i in range(num_workers)]
        procs.extend(workers)
        return ps, workers

    yield start
    _stop(procs)


def test_two_workers_reach_last_step_and_exit_promptly(cluster):
    ps, workers = cluster(2, "--last_step=600")
    results = [_finish(w, 60) for w in workers]
    for rc, out in results:
        assert rc == 0, out
        assert "done: global step" in out
    assert _global_step(ps) == 600


def test_backup_worker_three_replicas_aggregate_two(cluster):
    ps, workers = cluster(3, "--last_step=100", "--replicas_to_aggregate=2")
    for w in workers:
        rc, out = _finish(w, 60)
        assert rc == 0, out
    assert _global_step(ps) in (100, 101)  # a backup's late gradients may make one more step


@pytest.mark.parametrize("victim", [1, 0], ids=["non_chief_killed", "chief_killed"])
def test_a_killed_worker_never_leaves_the_other_hanging(cluster, victim):
    last_step = 1500
    ps, workers = cluster(2, f"--last_step={last_step}")
    _wait_for_step(ps, 100, workers)
    os.kill(workers[victim].pid, signal.SIGKILL)
    killed_at = time.monotonic()
    rc, out = _finish(workers[1 - victim], 30)
    assert time.monotonic() - killed_at < 30
    if rc == 0:  # it trained on alone (the tokens allow a lone replica to go on)
        assert _global_step(ps) == last_step
    else:
        assert "DeadlineExceededError" in out and "sync_token_q" in out, out


def test_a_replica_step_sends_the_ps_one_message_of_tensors(make_cluster):
    """Per global step with one replica the ps gets the replica's RunGraph, the chief's
    aggregation RunGraph and one message of tensors: the replica's local step rides with
    its gradients instead of travelling alone ahead of them."""
    import numpy as np

    from dtf.wire import transport

    cl = make_cluster(ps=1, worker=1)
    cl.start("ps", 0)  # the worker's server runs here, beside its training loop
    ps = cl.jobs["ps"][0]
    cluster = tf.train.ClusterSpec(cl.jobs)
    server = tf.train.Server(cluster, job_name="worker", task_index=0)
    client = transport.Client(None)
    try:
        with tf.Graph().as_default():
            with tf.device(tf.train.replica_device_setter(worker_device="/job:worker/task:0",
                                                          cluster=cluster)):
                x = tf.constant(np.ones((4, 3), np.float32))
                w = tf.Variable(np.zeros((3, 2), np.float32))
                loss = tf.reduce_sum(tf.square(tf.matmul(x, w)))  # its gradient needs w
                gs = tf.train.get_or_create_global_step()
                opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1),
                                                     replicas_to_aggregate=1, total_num_replicas=1)
                train = opt.minimize(loss, global_step=gs)
            hooks = [opt.make_session_run_hook(True), tf.train.StopAtStepHook(last_step=1000)]
            config = tf.ConfigProto(device_filters=["/job:ps", "/job:worker/task:0"])
            with tf.train.MonitoredTrainingSession(
                    master=server.target, is_chief=True, hooks=hooks, config=config,
                    save_checkpoint_secs=None, save_summaries_steps=None,
                    save_summaries_secs=None, log_step_count_steps=0) as sess:
                for _ in range(5):
                    sess.run(train)
                before = client.call(ps, {"type": "Status"}, 10)["messages"]
                steps = 30
                first = sess.run(gs)
                for _ in range(steps):
                    sess.run(train)
                last = sess.run(gs)
                after = client.call(ps, {"type": "Status"}, 10)["messages"]
        assert last - first == steps
        # Two RunGraph, one tensor message; the Status and global-step fetches add a few.
        assert after - before <= 3 * steps + 4, (before, after)
    finally:
        client.close()
        server.stop()
