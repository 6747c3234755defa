"""Faults on real task processes: kill -9 of any one task is reported by name within a
bound, between-graph training goes on without a dead worker task, and a process killed in
the middle of checkpoint saves always leaves the newest good checkpoint loadable.

(Recovery of training from a checkpoint after a ps restart is in test_training.py.)
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import dtf as tf
from dtf.runtime import service
from dtf.wire import transport
from tests.cluster.conftest import REPO
from tests.cluster.test_training import _example, _finish, _trainer_args, _wait_for_checkpoint, _worker_config

pytestmark = pytest.mark.cluster

# A dead peer is noticed by the next liveness ping (every PING_EVERY_S) once it has gone
# unanswered for PING_TIMEOUT_S; the rest is slack for a busy machine.
REPORT_BOUND_S = transport.PING_EVERY_S + transport.PING_TIMEOUT_S + 5.0


def _cross_task_graph():
    """A variable on the ps, read on worker 1, finished on worker 0 (the session's master)."""
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(1.0, name="v")
    with tf.device("/job:worker/task:1"):
        a = v * 2.0
    with tf.device("/job:worker/task:0"):
        out = a + 1.0
    return v, out


def _run_until_error(sess, fetch, limit_s):
    start = time.monotonic()
    while time.monotonic() - start < limit_s:
        try:
            sess.run(fetch)
        except tf.errors.OpError as e:
            return e, time.monotonic() - start
    pytest.fail(f"no error within {limit_s} s of the kill")


@pytest.mark.parametrize("victim", [("ps", 0), ("worker", 1), ("worker", 0)])
def test_killed_task_is_reported_by_name_within_a_bound(make_cluster, victim):
    cl = make_cluster(ps=1, worker=2).start_all()
    job, index = victim
    master_killed = victim == ("worker", 0)
    # A peer is named as a task; the session's own master by its address.
    name = cl.jobs[job][index] if master_killed else service.task_name(job, index)
    with tf.Graph().as_default():
        v, out = _cross_task_graph()
        with tf.Session(cl.target("worker", 0)) as sess:
            sess.run(v.initializer)
            assert sess.run(out) == 3.0
            cl.tasks[victim].kill()
            err, elapsed = _run_until_error(sess, out, 30)
            assert isinstance(err, tf.errors.UnavailableError), err
            assert name in err.message and elapsed < REPORT_BOUND_S, (elapsed, err.message)
            cl.start(job, index)  # same address; the ps comes back with fresh state
            if not master_killed:
                _run_with_retries(sess, [v.initializer, out])
        if master_killed:  # the session's handle died with its master (as in TF): a new one
            with tf.Session(cl.target("worker", 0)) as sess:
                _run_with_retries(sess, [v.initializer, out])


def _run_with_retries(sess, fetches, attempts=5):
    """After a restart the first step may be Aborted or Unavailable; then it must work."""
    for _ in range(attempts):
        try:
            sess.run(fetches[0])
            assert sess.run(fetches[1]) == 3.0
            return
        except (tf.errors.AbortedError, tf.errors.UnavailableError):
            time.sleep(0.5)
    pytest.fail(f"the session did not recover in {attempts} attempts")


def test_training_goes_on_when_another_worker_task_dies(make_cluster, tmp_path):
    cl = make_cluster(ps=1, worker=2).start_all()
    ckpt = tmp_path / "ckpt"
    args = _trainer_args(ckpt, 400, 50, "--step_delay=0.01")
    env = {"DTF_RECOVERY_TIMEOUT_S": "3"}
    chief = _example("between_graph_async.py", *args, tf_config=_worker_config(cl, 0), env=env)
    other = _example("between_graph_async.py", *args, tf_config=_worker_config(cl, 1), env=env)
    _wait_for_checkpoint(ckpt, 50, chief)
    cl.tasks[("worker", 1)].kill()
    killed = time.monotonic()
    code, out = _finish(other, timeout=60)
    assert code != 0 and cl.jobs["worker"][1] in out, out  # its master is gone: named by address
    assert time.monotonic() - killed < REPORT_BOUND_S + 3.0 + 10.0  # + recovery window, exit
    code, out = _finish(chief, timeout=90)
    assert code == 0, out
    assert "final global step" in out
    assert int(tf.train.load_variable(str(ckpt), "global_step")) >= 400


# -- kill -9 in the middle of checkpoint saves ------------------------------------------

SAVER_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    import dtf as tf

    ckpt_dir, n_vars, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    step = tf.Variable(0, dtype=tf.int64, name="step")
    vs = [tf.Variable(tf.zeros([size]), name=f"v{i}") for i in range(n_vars)]
    bump = tf.group(tf.assign_add(step, 1), *[tf.assign_add(v, tf.ones([size])) for v in vs])
    saver = tf.train.Saver(max_to_keep=3)
    with tf.Session() as sess:
        latest = tf.train.latest_checkpoint(ckpt_dir)
        if latest:
            saver.restore(sess, latest)
        else:
            sess.run(tf.global_variables_initializer())
        # Ready once a save has completed, so each kill lands inside one of the saves that
        # follow it, however slow this machine's start-up is.
        sess.run(bump)
        saver.save(sess, ckpt_dir + "/model", global_step=int(sess.run(step)))
        print("ready", flush=True)
        while True:
            sess.run(bump)
            saver.save(sess, ckpt_dir + "/model", global_step=int(sess.run(step)))
""")


def _check_consistent(ckpt_dir, n_vars, size):
    """The newest checkpoint loads, and every variable holds the value of the same save."""
    latest = tf.train.latest_checkpoint(ckpt_dir)
    assert latest is not None
    reader = tf.train.NewCheckpointReader(latest)
    step = int(reader.get_tensor("step"))
    assert latest.endswith(f"-{step}")
    for i in range(n_vars):
        np.testing.assert_array_equal(reader.get_tensor(f"v{i}"), np.full([size], step, np.float32))
    with tf.Graph().as_default():
        restored = tf.Variable(np.zeros([size], np.float32), name="v0")
        with tf.Session() as sess:
            tf.train.Saver({"v0": restored}).restore(sess, latest)
            assert sess.run(restored)[0] == step
    return step


def test_kill_during_checkpoint_saves_leaves_newest_good_checkpoint(tmp_path):
    n_vars, size, kills = 8, 1 << 16, 10  # 2 MiB per save
    script = tmp_path / "saver.py"
    script.write_text(SAVER_SCRIPT)
    ckpt_dir = str(tmp_path / "ckpt")
    os.makedirs(ckpt_dir)
    rng = random.Random(8)
    steps = []
    for _ in range(kills):
        proc = subprocess.Popen([sys.executable, str(script), ckpt_dir, str(n_vars), str(size)], cwd=REPO,
                                env=dict(os.environ, PYTHONUNBUFFERED="1"), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        try:
            line = proc.stdout.readline()
            assert "ready" in line, line + proc.stdout.read()
            time.sleep(rng.uniform(0.05, 0.6))  # somewhere inside one of many saves
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
            proc.stdout.close()
        if tf.train.latest_checkpoint(ckpt_dir) is not None:
            steps.append(_check_consistent(ckpt_dir, n_vars, size))
    assert len(steps) >= kills - 2 and steps == sorted(steps) and steps[-1] > steps[0], steps
    leftovers = [f for f in os.listdir(ckpt_dir) if ".tmp" in f]
    assert len(leftovers) <= kills, leftovers  # at most one torn temporary per kill
    with open(os.path.join(ckpt_dir, "checkpoint")) as f:
        assert "model_checkpoint_path" in f.read()
