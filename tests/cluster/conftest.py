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

    def freeze(self, timeout=10.0):
        """SIGSTOPs the task and returns once every thread of it has stopped: kill() returns
        before that, and on a loaded machine a thread that is not the one the kernel picked
        to take the signal can still answer a message in between."""
        os.kill(self.proc.pid, signal.SIGSTOP)
        deadline = time.monotonic() + timeout
        while not _all_threads_stopped(self.proc.pid):
            if time.monotonic() > deadline:
                self.thaw()  # not left stopped for the teardown to wait out
                raise RuntimeError(f"task {self.job}:{self.index} did not stop in {timeout} s")
            time.sleep(0.002)

    def thaw(self):
        os.kill(self.proc.pid, signal.SIGCONT)

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


def _all_threads_stopped(pid) -> bool:
    """Whether /proc shows every thread of ``pid`` stopped (state T)."""
    threads = f"/proc/{pid}/task"
    for tid in os.listdir(threads):
        try:
            with open(f"{threads}/{tid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]  # the name may hold spaces
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        if state != "T":
            return False
    return True


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
