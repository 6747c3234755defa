"""Task processes on free 127.0.0.1 ports, for either implementation, stopped by PID.

dtf tasks run ``python -m dtf server``; TensorFlow tasks run
``python -m bench.tf_server`` (same flags). Both print a "listening on" line once serving.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The command (after ``python``) of a task; the classic server flags follow it.
SERVER_COMMANDS = {"dtf": ["-m", "dtf", "server"], "tf": ["-m", "bench.tf_server"]}


_handed_out: set = set()  # the kernel may hand a closed ephemeral port out again


def free_port() -> int:
    """A free 127.0.0.1 port this process has not returned before (a cluster's tasks
    each get their own; as dtf.train.server.free_port, which the TensorFlow side lacks)."""
    for _ in range(100):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _handed_out:
            _handed_out.add(port)
            return port
    raise OSError("no free 127.0.0.1 port left that this process has not handed out")


def quiet_env() -> dict:
    """The environment for child processes: unbuffered, TensorFlow's C++ logs muted, and
    OpenBLAS threads that stop spinning soon after a call (as ``import dtf`` sets it, but
    also for processes that load numpy before dtf)."""
    return dict(os.environ, PYTHONUNBUFFERED="1", TF_CPP_MIN_LOG_LEVEL="3",
                OPENBLAS_THREAD_TIMEOUT=os.environ.get("OPENBLAS_THREAD_TIMEOUT", "4"))


def stop_process(proc, grace_s=5.0):
    """SIGTERM, then SIGKILL after ``grace_s``; only this one PID."""
    if proc is None or proc.poll() is not None:
        return
    try:
        proc.terminate()
        proc.wait(grace_s)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)


def wait_for_output(proc, log_path: str, marker: str, timeout_s: float, what: str) -> str:
    """Waits until the child's log holds a line containing ``marker``; kills it on failure."""
    deadline = time.monotonic() + timeout_s
    text = ""
    while time.monotonic() < deadline:
        with open(log_path, errors="replace") as f:
            text = f.read()
        for line in text.splitlines():
            if marker in line:
                return line
        if proc.poll() is not None:
            break
        time.sleep(0.02)
    stop_process(proc)
    raise RuntimeError(f"{what} did not report {marker!r} in {timeout_s:.0f} s:\n{text[-3000:]}")


class Cluster:
    """Addresses for ``jobs`` ({job: n tasks}) on free ports; ``start`` launches tasks."""

    def __init__(self, impl: str, jobs: dict, python: str = sys.executable, env: dict | None = None):
        self.impl = impl
        self.python = python
        self.env = env or {}  # added to the tasks' environment
        self.jobs = {j: [f"127.0.0.1:{free_port()}" for _ in range(n)] for j, n in jobs.items()}
        self.procs: list = []
        self.log_dir = tempfile.mkdtemp(prefix=f"bench-{impl}-")

    @property
    def flags_spec(self) -> str:
        """The standalone-server form: ``ps|h:p,worker|h:p;h:p``."""
        return ",".join(f"{j}|{';'.join(a)}" for j, a in self.jobs.items())

    def target(self, job, index) -> str:
        return f"grpc://{self.jobs[job][index]}"

    def start(self, job, index, timeout_s=60.0):
        log_path = os.path.join(self.log_dir, f"{job}-{index}.log")
        with open(log_path, "w") as log:
            proc = subprocess.Popen(
                [self.python, *SERVER_COMMANDS[self.impl], f"--cluster_spec={self.flags_spec}",
                 f"--job_name={job}", f"--task_index={index}"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=REPO,
                env=dict(quiet_env(), **self.env))
        self.procs.append(proc)
        wait_for_output(proc, log_path, "listening on", timeout_s, f"{self.impl} task {job}:{index}")
        return proc

    def start_jobs(self, *job_names):
        for job in job_names:
            for i in range(len(self.jobs[job])):
                self.start(job, i)
        return self

    def stop(self):
        for p in self.procs:
            stop_process(p)
        self.procs.clear()
        shutil.rmtree(self.log_dir, ignore_errors=True)
