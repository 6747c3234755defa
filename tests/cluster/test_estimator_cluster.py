"""train_and_evaluate's roles on a real cluster: a chief, a worker, a ps and an evaluator,
each a process with its TF_CONFIG, sharing a model_dir."""
import json
import os
import signal
import subprocess
import sys

import numpy as np

import dtf as tf
from dtf.train.server import free_port
from tests.cluster.test_training import _finish as finish_example

HERE = os.path.dirname(os.path.abspath(__file__))


def _start(role, index, cluster, model_dir, max_steps):
    env = dict(os.environ, PYTHONUNBUFFERED="1",
               TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": role, "index": index}}))
    env.pop("DTF_PROGRESS", None)
    return subprocess.Popen([sys.executable, os.path.join(HERE, "estimator_job.py"), model_dir,
                             str(max_steps)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _finish(proc):
    rc, out = finish_example(proc, timeout=180)
    assert rc == 0, out
    return out


def test_chief_worker_ps_and_evaluator(tmp_path):
    cluster = {job: [f"127.0.0.1:{free_port()}"] for job in ("chief", "worker", "ps")}
    model_dir = str(tmp_path / "model")
    max_steps = 300  # enough that the worker usually trains too (not asserted: timing)
    procs = {role: _start(role, 0, cluster, model_dir, max_steps)
             for role in ("ps", "chief", "worker", "evaluator")}
    try:
        chief = _finish(procs["chief"])
        worker = _finish(procs["worker"])
        evaluator = _finish(procs["evaluator"])
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(10)
    # the device setter put the variables on the ps task for both trainers
    assert "weights on /job:ps/task:0" in chief, chief
    assert "weights on /job:ps/task:0" in worker, worker
    steps = [int(out.split("steps run")[1].split()[0]) for out in (chief, worker)]
    assert sum(steps) >= max_steps
    assert "evaluator done" in evaluator
    # the evaluator stopped after evaluating a checkpoint at or past max_steps
    eval_dir = os.path.join(model_dir, "eval")
    losses = {}
    for f in sorted(os.listdir(eval_dir)):
        for event in tf.train.summary_iterator(os.path.join(eval_dir, f)):
            for v in event.summary.value:
                if v.tag == "loss":
                    losses[event.step] = v.simple_value
    assert max(losses) >= max_steps
    initial_loss = float(np.mean(np.square(
        np.random.RandomState(0).randn(256, 3).astype(np.float32) @ [[1.0], [-2.0], [0.5]]
        + 0.3)))
    assert losses[max(losses)] < 0.1 * initial_loss
    assert tf.train.load_variable(model_dir, "global_step") >= max_steps
