"""Per-task pid and log files under the config's state and log directories, and the checks
that make sure we only ever signal processes we started."""
from __future__ import annotations

import json
import os
import time
from pathlib import Path


def _stem(task) -> str:
    return f"{task.job}-{task.index}"


def log_path(config, task) -> Path:
    return Path(config.log_dir) / f"{_stem(task)}.log"


def pid_path(config, task) -> Path:
    return Path(config.state_dir) / f"{_stem(task)}.pid"


def record(config, task, pid: int, host: str = "local"):
    path = pid_path(config, task)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"pid": pid, "host": host, "address": task.address,
                                "started": time.time()}) + "\n")


def recorded(config, task) -> dict | None:
    """The pid record of ``task`` ({"pid", "host", ...}), or None."""
    try:
        data = json.loads(pid_path(config, task).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("pid"), int) else None


def forget(config, task):
    try:
        pid_path(config, task).unlink()
    except FileNotFoundError:
        pass


def is_our_server(pid: int) -> bool:
    """Whether ``pid`` is alive and is a dtf server (and not a recycled pid)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return _alive_without_proc(pid)
    words = " ".join(a.decode(errors="replace") for a in argv)
    return "dtf" in words and "server" in words


def _alive_without_proc(pid: int) -> bool:
    # No /proc (macOS): fall back to "the pid exists"; the pid file is ours.
    if Path("/proc/self").exists():
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"
