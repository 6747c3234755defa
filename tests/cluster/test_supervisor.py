"""tf.train.Supervisor over real task processes: 1 ps + 2 workers between-graph, as TF1's
mnist_replica.py runs (examples/supervisor_replica.py), and a restarted chief resuming
from its checkpoint."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

import dtf as tf
from dtf.train.server import free_port
from tests.cluster.conftest import REPO
from tests.cluster.test_training import _finish as _finish_process

pytestmark = pytest.mark.cluster

SCRIPT = os.path.join(REPO, "examples", "supervisor_replica.py")


class Replicas:
    """Addresses for 1 ps + 2 workers; each task a process of the example script."""

    def __init__(self):
        self.ps, self.w0, self.w1 = (f"127.0.0.1:{free_port()}" for _ in range(3))
        self.procs = []

    def start(self, job, index, *args):
        cmd = [sys.executable, SCRIPT, f"--ps_hosts={self.ps}", f"--worker_hosts={self.w0},{self.w1}",
               f"--job_name={job}", f"--task_index={index}", *args]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        self.procs.append(proc)
        return proc

    def stop(self):
        procs, self.procs = self.procs, []
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()


@pytest.fixture
def replicas():
    r = Replicas()
    yield r
    r.stop()


def _finish(proc, timeout=120):
    code, out = _finish_process(proc, timeout)
    assert code == 0, out
    return out


# A log record (stderr) can land between a print's text and its newline (stdout) in the
# merged output: "starting at global step 0" + "2026-12-01 21:00:47,742 INFO ...".
_LOG_RECORD = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ [^\n]*\n?")


def _prints(out):
    """The output without its log records: what the trainer printed, lines intact."""
    return _LOG_RECORD.sub("", out)


def _checkpoint_steps(train_dir):
    state = tf.train.get_checkpoint_state(str(train_dir))
    return [int(p.rsplit("-", 1)[1]) for p in state.all_model_checkpoint_paths]


def test_chief_initializes_worker_waits_both_train_and_a_restarted_chief_resumes(replicas, tmp_path):
    train_dir = tmp_path / "train"
    replicas.start("ps", 0)
    # The non-chief starts first: it must wait until the chief has initialized the model.
    worker = replicas.start("worker", 1, "--train_steps=80", "--step_delay=0.005")
    chief = replicas.start("worker", 0, f"--train_dir={train_dir}", "--train_steps=80",
                           "--save_model_secs=0.5", "--step_delay=0.005")
    chief_out, worker_out = _finish(chief), _finish(worker)

    assert "Worker 0: Initializing session..." in chief_out
    assert "Restoring parameters" not in chief_out
    # A fresh start (no restore): the chief starts near 0. Not exactly 0: once the chief has
    # initialized the model, worker 1 may train a few steps before the chief reads the step.
    first = re.search(r"Worker 0: starting at global step (\d+)", _prints(chief_out))
    assert first and int(first.group(1)) < 80, chief_out
    assert "Worker 1: Waiting for session to be initialized..." in worker_out
    assert "Worker 1: Session initialization complete." in worker_out
    for index, out in ((0, chief_out), (1, worker_out)):
        done = re.search(rf"Worker {index}: training done after (\d+) local steps, global step (\d+)",
                         _prints(out))
        assert done, out
        assert int(done.group(1)) >= 1 and int(done.group(2)) >= 80
    # The chief's checkpoint thread saved at start (step 0) and on its timer; the script
    # saves once more at the end. The non-chief wrote nothing.
    steps = _checkpoint_steps(train_dir)
    assert steps[-1] >= 80 and len(steps) >= 2, (steps, chief_out)
    assert "Saving checkpoint to path" in chief_out
    final = int(tf.train.load_variable(str(train_dir), "global_step"))
    assert final == steps[-1], chief_out
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(train_dir))

    # A fresh cluster (new ps: nothing in memory) and a restarted chief: the model comes back
    # from the newest checkpoint and training goes on from its step.
    replicas.stop()
    again = Replicas()
    try:
        again.start("ps", 0)
        out = _finish(again.start("worker", 0, f"--train_dir={train_dir}",
                                  f"--train_steps={final + 20}", "--save_model_secs=600"))
    finally:
        again.stop()
    assert f"Restoring parameters from {train_dir}{os.sep}model.ckpt-{final}" in out, out
    assert f"Worker 0: starting at global step {final}" in out
    assert int(tf.train.load_variable(str(train_dir), "global_step")) == final + 20


def test_sync_replicas_under_the_supervisor_chief_runs_the_queue_runner(replicas, tmp_path):
    """mnist_replica.py --sync_replicas: the chief runs the optimizer's chief queue runner
    through Supervisor.start_queue_runners; both replicas reach the last step."""
    train_dir = tmp_path / "train"
    replicas.start("ps", 0)
    worker = replicas.start("worker", 1, "--sync_replicas", "--train_steps=30")
    chief = replicas.start("worker", 0, "--sync_replicas", f"--train_dir={train_dir}",
                           "--train_steps=30")
    chief_out, worker_out = _finish(chief), _finish(worker)
    for index, out in ((0, chief_out), (1, worker_out)):
        done = re.search(rf"Worker {index}: training done after \d+ local steps, global step (\d+)",
                         _prints(out))
        assert done and int(done.group(1)) >= 30, out
    assert "Running local_init_op." in worker_out
    assert int(tf.train.load_variable(str(train_dir), "global_step")) >= 30
