"""``dtf down``: stop every task we started (SIGTERM, then SIGKILL after a bound), local ones
by signal and remote ones over ssh, by the pids ``dtf up`` recorded."""
from __future__ import annotations

import os
import signal
import time

import typer
from rich.markup import escape

from dtf.cli.console import ConfigOption, console, fail, load_config


def down(config: ConfigOption = None,
         grace: float = typer.Option(5.0, help="Seconds between SIGTERM and SIGKILL.")):
    """Stop the cluster's tasks and wait until their ports are free."""
    from dtf.cli import probe, state

    cfg = load_config(config)
    tasks = cfg.tasks()
    records = {t: r for t in tasks if (r := state.recorded(cfg, t)) is not None}
    local = [(t, r["pid"]) for t, r in records.items() if r.get("host", "local") == "local"]
    remote = [(t, r) for t, r in records.items() if r.get("host", "local") != "local"]
    stopped = _stop_local(local, grace)
    remote_stopped, errors = _stop_remote(cfg, remote, grace)
    unreached = {task for task, _ in errors}
    for task in tasks:
        if task not in unreached:  # keep the pid of what we could not stop, to try again
            state.forget(cfg, task)
    taken = probe.ports_free([t for t in tasks if t not in unreached], grace)
    for task, pid in stopped:
        console.print(f"stopped {task.name} ({task.address}, pid {pid})")
    for task, pid in remote_stopped:
        console.print(f"stopped {task.name} ({task.address}, pid {pid} on {task.host}, over ssh)")
    if errors:
        fail("\n".join(f"could not stop {task.name} ({task.address}): {escape(why)}"
                       for task, why in errors))
    if taken:
        names = ", ".join(f"{t.name} ({t.address})" for t in taken)
        fail(f"these ports are still taken, by processes this cluster did not start (or started "
             f"elsewhere): {names}. Stop them yourself.")
    console.print(f"cluster {cfg.path} is down")


def _stop_local(entries, grace: float) -> list:
    """SIGTERM our live servers, SIGKILL those still alive after ``grace``."""
    from dtf.cli import state

    ours = [(task, pid) for task, pid in entries if state.is_our_server(pid)]
    for _, pid in ours:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while any(state.is_our_server(pid) for _, pid in ours) and time.monotonic() < deadline:
        time.sleep(0.05)
    for _, pid in ours:
        if state.is_our_server(pid):
            _signal(pid, signal.SIGKILL)
    return ours


def _stop_remote(cfg, entries, grace: float):
    """Stops remote tasks by their recorded pids, one ssh call per host.

    Returns ([(task, pid)] stopped, [(task, why)] that could not be reached)."""
    from dtf.cli import ssh

    by_host = {}
    for task, record in entries:
        by_host.setdefault(record["host"], []).append((task, record["pid"]))
    stopped, errors = [], []
    for host, tasks in by_host.items():
        try:
            result = ssh.stop(cfg.ssh_for(host), host, [pid for _, pid in tasks], grace)
        except ssh.SshError as e:
            errors += [(task, str(e)) for task, _ in tasks]
            continue
        stopped += [(task, pid) for task, pid in tasks if result.get(pid) in ("stopped", "killed")]
    return stopped, errors


def _signal(pid: int, sig):
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
