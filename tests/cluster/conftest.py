"""Cluster tier: real task processes on 127.0.0.1, bounded and stopped by PID."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from dtf.train.server import free_port

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class TaskProcess:
    def __init__(self, spec: str, job: str, index: int, preexec_fn=None):
        self.spec, self.job, self.index = spec, job, index
        self.preexec_fn = preexec_fn  # runs in the child before the task starts
        self.proc = None

    def start(self, timeout=30.0):
        # A task that crashes before its ready line prints its native stack (faulthandler).
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONFAULTHANDLER="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "dtf", "server", f"--cluster_spec={self.spec}",
             f"--job_name={self.job}", f"--task_index={self.index}"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=REPO, env=env, text=True,
            preexec_fn=self.preexec_fn)
        deadline = time.monotonic() + timeout
        line = ""
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if "listening on" in line:
                return self
            if self.proc.poll() is not None:
                break
        code = self.proc.poll()
        out = line + (self.proc.stdout.read() if code is not None else "")
        self.kill()
        how = f"exited with code {code}" if code is not None else f"not ready in {timeout} s"
        raise RuntimeError(f"task {self.job}:{self.index} did not start ({how}): {out}")

    @property
    def pid(self):
        return self.proc.pid

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


class Cluster:
    """Addresses for jobs on free ports; tasks started on demand."""

    def __init__(self, jobs: dict):
        self.jobs = {j: [f"127.0.0.1:{free_port()}" for _ in range(n)] for j, n in jobs.items()}
        self.spec = ",".join(f"{j}|{';'.join(a)}" for j, a in self.jobs.items())
        self.tasks: dict = {}

    def start(self, job, index):
        t = TaskProcess(self.spec, job, index).start()
        self.tasks[(job, index)] = t
        return t

    def start_all(self):
        for j, addrs in self.jobs.items():
            for i in range(len(addrs)):
                self.start(j, i)
        return self

    def target(self, job, index):
        return f"grpc://{self.jobs[job][index]}"

    def cluster_spec(self):
        import dtf as tf

        return tf.train.ClusterSpec(self.jobs)

    def stop(self):
        for t in self.tasks.values():
            t.stop()


@pytest.fixture
def make_cluster():
    made = []

    def make(**jobs):
        c = Cluster(jobs)
        made.append(c)
        return c

    yield make
    for c in made:
        c.stop()


@pytest.fixture(scope="package", autouse=True)
def no_cuda_simulator_in_task_processes():
    """tests/gpu turns Numba's CUDA simulator on for this pytest process at collection;
    task processes started here must not inherit it (each would probe a simulated GPU)."""
    saved = os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
    yield
    if saved is not None:
        os.environ["NUMBA_ENABLE_CUDASIM"] = saved
