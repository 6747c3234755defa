"""Distributed training on real task processes: between-graph async training, in-graph
replication, and recovery from a ps that is killed (and restarted, or not)."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

import dtf as tf
from tests.cluster.conftest import REPO

pytestmark = pytest.mark.cluster

EXAMPLES = os.path.join(REPO, "examples")
PS_TASK = "/job:ps/replica:0/task:0"


def _example(name, *args, tf_config=None, env=None):
    full_env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
    full_env.pop("TF_CONFIG", None)
    full_env.pop("DTF_PROGRESS", None)
    if tf_config is not None:
        full_env["TF_CONFIG"] = json.dumps(tf_config)
    return subprocess.Popen([sys.executable, os.path.join(EXAMPLES, name), *args], cwd=REPO,
                            env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _finish(proc, timeout=60):
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail(f"{proc.args} did not finish in {timeout} s:\n{out}")
    return proc.returncode, out


def _worker_config(cl, index):
    return {"cluster": cl.jobs, "task": {"type": "worker", "index": index}, "rpc_layer": "grpc"}


def _trainer_args(ckpt, last_step, every, *extra):
    return (f"--checkpoint_dir={ckpt}", f"--last_step={last_step}",
            f"--save_checkpoint_steps={every}", *extra)


def _checkpoint_step(ckpt):
    path = tf.train.latest_checkpoint(str(ckpt))
    return None if path is None else int(path.rsplit("-", 1)[1])


def _wait_for_checkpoint(ckpt, step, proc, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = _checkpoint_step(ckpt)
        if found is not None and found >= step:
            return found
        if proc.poll() is not None:
            pytest.fail(f"trainer exited early:\n{proc.communicate()[0]}")
        time.sleep(0.05)
    pytest.fail(f"no checkpoint past step {step} after {timeout} s")


def test_between_graph_async_one_ps_two_workers_by_flags(tmp_path):
    from dtf.train.server import free_port

    ps, w0, w1 = (f"127.0.0.1:{free_port()}" for _ in range(3))
    flags = (f"--ps_hosts={ps}", f"--worker_hosts={w0},{w1}")
    ps_proc = _example("between_graph_async.py", *flags, "--job_name=ps")
    ckpt = tmp_path / "ckpt"
    try:
        workers = [_example("between_graph_async.py", *flags, "--job_name=worker", f"--task_index={i}",
                            *_trainer_args(ckpt, 60, 20)) for i in (0, 1)]
        results = [_finish(w) for w in workers]
    finally:
        ps_proc.kill()
        ps_proc.communicate()
    for code, out in results:
        assert code == 0, out
    chief_out = results[0][1]
    # The chief saves once its session is made; worker 1 may have stepped by then.
    assert re.search(r"Saving checkpoints for \d+ into ", chief_out), chief_out
    final = int(tf.train.load_variable(str(ckpt), "global_step"))
    assert 60 <= final <= 61  # both workers may run their last step at once
    assert f"final global step {final}" in chief_out
    assert "Waiting for model to be ready" in results[1][1] or "worker 1 done" in results[1][1] \
        or "worker 1 did no step" in results[1][1]


def test_in_graph_replication_over_two_workers(make_cluster):
    cl = make_cluster(ps=1, worker=2).start_all()
    code, out = _finish(_example("in_graph_replication.py", f"--ps_hosts={cl.jobs['ps'][0]}",
                                 f"--worker_hosts={','.join(cl.jobs['worker'])}", "--last_step=40"))
    assert code == 0, out
    assert "in-graph replication over 2 workers" in out


# Down for a moment (restarted before any ping notices) or long enough for pings to fail:
# either way the in-flight step must end (Aborted on the new incarnation, or Unavailable).
@pytest.mark.parametrize("ps_down_s", [0.2, 6.0])
def test_killed_and_restarted_ps_training_finishes_from_checkpoint(make_cluster, tmp_path, ps_down_s):
    cl = make_cluster(ps=1, worker=1).start_all()
    ckpt = tmp_path / "ckpt"
    worker = _example("between_graph_async.py", *_trainer_args(ckpt, 150, 25, "--step_delay=0.01"),
                      tf_config=_worker_config(cl, 0))
    killed_after = _wait_for_checkpoint(ckpt, 50, worker)
    cl.tasks[("ps", 0)].kill()
    time.sleep(ps_down_s)
    cl.start("ps", 0)
    code, out = _finish(worker)
    assert code == 0, out
    assert "preemption" in out and f"Restoring parameters from {ckpt}" in out
    assert int(tf.train.load_variable(str(ckpt), "global_step")) == 150
    assert "final global step 150" in out and killed_after >= 50


def test_restarted_worker_process_resumes_from_checkpoint(make_cluster, tmp_path):
    cl = make_cluster(ps=1, worker=1).start_all()
    ckpt = tmp_path / "ckpt"
    worker = _example("between_graph_async.py", *_trainer_args(ckpt, 1000, 10, "--step_delay=0.01"),
                      tf_config=_worker_config(cl, 0))
    reached = _wait_for_checkpoint(ckpt, 20, worker)
    worker.send_signal(signal.SIGKILL)
    worker.communicate()
    code, out = _finish(_example("between_graph_async.py", *_trainer_args(ckpt, reached + 15, 10),
                                 tf_config=_worker_config(cl, 0)))
    assert code == 0, out
    assert f"Restoring parameters from {ckpt}" in out
    assert int(tf.train.load_variable(str(ckpt), "global_step")) == reached + 15


def test_ps_that_never_comes_back_fails_naming_the_task(make_cluster, tmp_path):
    cl = make_cluster(ps=1, worker=1).start_all()
    ckpt = tmp_path / "ckpt"
    worker = _example("between_graph_async.py", *_trainer_args(ckpt, 100000, 20, "--step_delay=0.01"),
                      tf_config=_worker_config(cl, 0), env={"DTF_RECOVERY_TIMEOUT_S": "3"})
    _wait_for_checkpoint(ckpt, 20, worker)
    cl.tasks[("ps", 0)].kill()
    start = time.monotonic()
    code, out = _finish(worker, timeout=60)
    assert code != 0
    assert time.monotonic() - start < 30
    assert "UnavailableError" in out and "Gave up" in out and PS_TASK in out
    # The error naming the ps is the last thing printed (not "Session is already closed.").
    last = out.strip().splitlines()[-1]
    assert last.startswith("dtf.framework.errors.UnavailableError: Gave up") and PS_TASK in last, out[-2000:]
