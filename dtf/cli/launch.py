"""Starting the tasks of a cluster in the background and waiting until they answer.

Local tasks run as detached processes (``python -m dtf server``) writing to their log file;
tasks on other hosts start the same way over ssh (dtf/cli/ssh.py), with the classic
``--cluster_spec`` flags so the remote host needs no cluster.toml. Local tasks inherit
DTF_CLUSTER_KEYS (keys.prepare_launch set it here); remote ones get a copy of the key file
through the ssh channel. Either way the pid is
recorded, and a task counts as running when it answers Ping as itself over the network, so a
second ``dtf up`` starts nothing.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass

from dtf.cli import probe, slurm, ssh, state
from dtf.cli.config import is_local_host


@dataclass
class Outcome:
    task: object
    state: str  # "running" (found up), "started", "failed", or "stopped" (started, then
    # stopped again because another task failed: a cluster starts whole or not at all)
    detail: str = ""
    tail: str | None = None  # the end of its log, when it failed after starting


def server_command(config, task) -> list:
    return [sys.executable, "-m", "dtf", "server", "--job", task.job, "--task", str(task.index),
            "-c", str(config.path)]


def task_env(config) -> dict:
    return {**os.environ, **config.env, "PYTHONUNBUFFERED": "1"}


def log_location(config, task) -> str:
    """Where a task's log is: a path here, or 'host:path' for a remote task."""
    if config.slurm is not None or is_local_host(task.host):  # srun writes the log here
        return os.path.relpath(state.log_path(config, task))
    return ssh.log_location(config.ssh_for(task.host), task)


def restart_line(task) -> str:
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return f"---- dtf up: task {task.name} restarted at {when}; its previous run's log is above ----\n"


class LocalTask:
    """A task process started here; the same interface as ssh.RemoteTask."""

    def __init__(self, config, task, command=None):
        """``command``: what starts the task (default: ``dtf server`` here; srun for Slurm)."""
        path = state.log_path(config, task)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "ab") as out:  # a restarted task's log keeps how its last run ended
            if out.tell():
                out.write(restart_line(task).encode())
                out.flush()
            self.proc = subprocess.Popen(command or server_command(config, task), stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=subprocess.STDOUT, cwd=config.path.parent,
                                         env=task_env(config), start_new_session=True)
        self.path = path
        state.record(config, task, self.proc.pid)

    def exited(self) -> str | None:
        code = self.proc.poll()
        return None if code is None else f"its process exited with code {code}"

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(5.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5.0)

    def tail(self) -> str:
        return state.tail(self.path)


def classic_flags(config) -> str:
    """The cluster as the classic --cluster_spec flag: 'ps|h:1,worker|h:2;h:3'."""
    return ",".join(f"{job}|{';'.join(addresses)}" for job, addresses in sorted(config.jobs.items()))


def start_remote(config, task, keys: str | None) -> ssh.RemoteTask:
    handle = ssh.start(config.ssh_for(task.host), task, classic_flags(config), config.env, keys)
    state.record(config, task, handle.pid, host=task.host)
    return handle


def start_cluster(config, timeout_s: float, key_file=None) -> list:
    """Starts every task that is not running; returns one Outcome per task.

    ``key_file``: the cluster's keys (None: plain mode), also in this process's environment."""
    tasks = config.tasks()
    keys = key_file.read_text(encoding="utf-8") if key_file is not None else None
    answers = probe.ask_all(tasks, "Ping", 1.0)
    outcomes, started = {}, {}
    for task in tasks:
        reply = answers[task]
        if probe.is_task(reply, task):
            outcomes[task] = Outcome(task, "running")
        elif reply is not None:
            outcomes[task] = Outcome(task, "failed", f"{task.address} is served by {reply.get('task')}, "
                                     f"not by {task.device_name}")
        elif config.slurm is not None:
            started[task] = LocalTask(config, task, slurm.srun_command(config, task))
        elif is_local_host(task.host):
            started[task] = LocalTask(config, task)
        else:
            try:
                started[task] = start_remote(config, task, keys)
            except ssh.SshError as e:
                outcomes[task] = Outcome(task, "failed", f"could not start it over ssh: {e}")
    outcomes.update(_wait_until_up(config, started, timeout_s))
    if any(o.state == "failed" for o in outcomes.values()):
        _roll_back(config, {t: h for t, h in started.items() if outcomes[t].state == "started"},
                   outcomes)
    return [outcomes[t] for t in tasks]


def _roll_back(config, started: dict, outcomes: dict):
    """Stops the tasks this call started, so that a failed start leaves no half cluster
    (tasks that were running before stay)."""
    for task, handle in started.items():
        try:
            handle.stop()
        except ssh.SshError as e:
            outcomes[task] = Outcome(task, "failed", f"started, but stopping it again failed ({e}); "
                                     "`dtf down` will try again")
            continue
        state.forget(config, task)
        outcomes[task] = Outcome(task, "stopped", "stopped again: another task failed")
    local = [t for t in started if is_local_host(t.host) and outcomes[t].state == "stopped"]
    probe.ports_free(local, 5.0)


def _wait_until_up(config, started: dict, timeout_s: float) -> dict:
    """Polls the started tasks until each answers or fails (its process exited)."""
    outcomes = {}
    pending = dict(started)
    deadline = time.monotonic() + timeout_s
    while pending:
        for task in probe.up_tasks(list(pending), 0.5):
            outcomes[task] = Outcome(task, "started")
            del pending[task]
        for task, handle in list(pending.items()):
            why = handle.exited()
            if why is not None:
                outcomes[task] = Outcome(task, "failed", why, handle.tail())
                state.forget(config, task)
                del pending[task]
        if pending and time.monotonic() >= deadline:
            for task, handle in pending.items():
                outcomes[task] = _give_up(config, task, handle, f"it did not answer within {timeout_s:g} s")
            break
        if pending:
            time.sleep(0.1)
    return outcomes


def _give_up(config, task, handle, why: str) -> Outcome:
    """Stops a task that never answered; its pid file stays when it could not be stopped."""
    try:
        handle.stop()
    except ssh.SshError as e:
        why += f"; stopping it failed too ({e}), so `dtf down` will try again"
    else:
        state.forget(config, task)
    return Outcome(task, "failed", why, handle.tail())
