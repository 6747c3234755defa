"""Starting the tasks of a cluster in the background and waiting until they answer.

Local tasks run as detached processes (``python -m dtf server``) writing to their log file;
tasks on other hosts must be started there for now (the [ssh] settings are read but not yet
used). A task counts as running when it
answers Ping as itself, so a second ``dtf up`` starts nothing.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass

from dtf.cli import probe, state
from dtf.cli.config import is_local_host


@dataclass
class Outcome:
    task: object
    state: str  # "running" (found up), "started", or "failed"
    detail: str = ""


def server_command(config, task) -> list:
    return [sys.executable, "-m", "dtf", "server", "--job", task.job, "--task", str(task.index),
            "-c", str(config.path)]


def task_env(config) -> dict:
    return {**os.environ, **config.env, "PYTHONUNBUFFERED": "1"}


def start_local(config, task) -> subprocess.Popen:
    log = state.log_path(config, task)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        proc = subprocess.Popen(server_command(config, task), stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT, cwd=config.path.parent,
                                env=task_env(config), start_new_session=True)
    state.record(config, task, proc.pid)
    return proc


def start_cluster(config, timeout_s: float) -> list:
    """Starts every task that is not running; returns one Outcome per task."""
    tasks = config.tasks()
    answers = probe.ask_all(tasks, "Ping", 1.0)
    outcomes, started = {}, {}
    for task in tasks:
        reply = answers[task]
        if probe.is_task(reply, task):
            outcomes[task] = Outcome(task, "running")
        elif reply is not None:
            outcomes[task] = Outcome(task, "failed", f"{task.address} is served by {reply.get('task')}, "
                                     f"not by {task.device_name}")
        elif is_local_host(task.host):
            started[task] = start_local(config, task)
        else:
            outcomes[task] = Outcome(task, "failed", _remote_hint(config, task))
    outcomes.update(_wait_until_up(config, started, timeout_s))
    return [outcomes[t] for t in tasks]


def _remote_hint(config, task) -> str:
    flags = ",".join(f"{job}|{';'.join(addresses)}" for job, addresses in sorted(config.jobs.items()))
    return (f"it runs on {task.host}, and starting tasks over SSH is not implemented yet; start it "
            f"there with: dtf server --cluster_spec='{flags}' --job_name={task.job} "
            f"--task_index={task.index}")


def _wait_until_up(config, started: dict, timeout_s: float) -> dict:
    """Polls the started tasks until each answers or fails (its process exited)."""
    outcomes = {}
    pending = dict(started)
    deadline = time.monotonic() + timeout_s
    while pending:
        for task, proc in list(pending.items()):
            code = proc.poll()
            if code is not None:
                outcomes[task] = Outcome(task, "failed", f"its process exited with code {code}")
                state.forget(config, task)
                del pending[task]
        for task in probe.up_tasks(list(pending), 0.5):
            outcomes[task] = Outcome(task, "started")
            del pending[task]
        if pending and time.monotonic() >= deadline:
            for task, proc in pending.items():
                proc.terminate()
                state.forget(config, task)
                outcomes[task] = Outcome(task, "failed", f"it did not answer within {timeout_s:g} s")
            break
        if pending:
            time.sleep(0.1)
    return outcomes
