"""``dtf down``: stop every task we started (SIGTERM, then SIGKILL after a bound)."""
from __future__ import annotations

import os
import signal
import time

import typer

from dtf.cli.console import ConfigOption, console, fail, load_config


def down(config: ConfigOption = None,
         grace: float = typer.Option(5.0, help="Seconds between SIGTERM and SIGKILL.")):
    """Stop the cluster's tasks and wait until their ports are free."""
    from dtf.cli import probe, state
    from dtf.cli.config import is_local_host

    cfg = load_config(config)
    tasks = cfg.tasks()
    local = []
    for task in tasks:
        record = state.recorded(cfg, task)
        if record is not None:
            local.append((task, record["pid"]))
    stopped = _stop_local(local, grace)
    for task in tasks:
        state.forget(cfg, task)
    taken = probe.ports_free([t for t in tasks if is_local_host(t.host)], grace)
    for task, pid in stopped:
        console.print(f"stopped {task.name} ({task.address}, pid {pid})")
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


def _signal(pid: int, sig):
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass
