"""examples/classic_replica.py, a TF1-style trainer ("float" placeholders, tf.app.flags,
tf.layers, tf.losses, tf.metrics, tf.train.Supervisor), on 1 ps + 2 worker processes.
The same file with only the import changed runs on TensorFlow."""
from __future__ import annotations

import glob
import os
import re
import subprocess
import sys

import pytest

import dtf as tf
from dtf.summary import summary_iterator
from dtf.train.server import free_port
from tests.cluster.conftest import REPO
from tests.cluster.test_training import _finish

pytestmark = pytest.mark.cluster

SCRIPT = os.path.join(REPO, "examples", "classic_replica.py")


def test_classic_replica_trains_on_one_ps_and_two_workers(tmp_path):
    ps, w0, w1 = (f"127.0.0.1:{free_port()}" for _ in range(3))
    common = [f"--ps_hosts={ps}", f"--worker_hosts={w0},{w1}", f"--train_dir={tmp_path}",
              "--train_steps=400"]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    procs = []

    def start(job, index):
        procs.append(subprocess.Popen([sys.executable, SCRIPT, *common, f"--job_name={job}",
                                       f"--task_index={index}"], cwd=REPO, env=env, text=True,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
        return procs[-1]

    try:
        start("ps", 0)
        worker = start("worker", 1)
        chief = start("worker", 0)
        outs = {}
        for index, proc in ((0, chief), (1, worker)):
            code, outs[index] = _finish(proc, timeout=120)
            assert code == 0, outs[index]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    for index, out in outs.items():
        done = re.search(rf"Worker {index}: (\d+) local steps, global step (\d+), accuracy ([\d.]+)", out)
        assert done, out
        assert int(done.group(1)) >= 1 and int(done.group(2)) >= 400
        assert float(done.group(3)) >= 0.9
    assert "Waiting for model to be ready" in outs[1] or "session ready" in outs[1]
    latest = tf.train.latest_checkpoint(str(tmp_path))
    assert int(latest.rsplit("-", 1)[1]) >= 400  # the chief's last save
    events = [e for f in glob.glob(f"{tmp_path}/events.*") for e in summary_iterator(f)]
    assert any(v.tag == "loss" for e in events if e.HasField("summary") for v in e.summary.value)
