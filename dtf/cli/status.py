"""``dtf status``: one row per task from its Status message; exit 1 when any is down."""
from __future__ import annotations

import json

import typer
from rich.markup import escape
from rich.table import Table

from dtf.cli.console import ConfigOption, console, duration, load_config

def status(config: ConfigOption = None,
           as_json: bool = typer.Option(False, "--json", help="Print a JSON list instead of a table."),
           timeout: float = typer.Option(2.0, help="Seconds to wait for each task's answer.")):
    """Show every task: up or down, pid, uptime, memory, steps served."""
    from dtf.cli import keys

    cfg = load_config(config)
    key_file = keys.prepare_client(cfg)
    rows = collect(cfg, timeout, secure=key_file is not None)
    if as_json:
        print(json.dumps(rows, indent=2))
    else:
        console.print(_table(cfg, rows, console.width))
        console.print(f"security: {keys.describe(key_file)}")
    raise typer.Exit(0 if all(r["state"] == "up" for r in rows) else 1)


def collect(cfg, timeout: float, secure: bool) -> list:
    """One row per task; ``secure``: whether we ask with the cluster's keys (so an answer
    means the task serves encrypted with them)."""
    from dtf.cli import probe

    tasks = cfg.tasks()
    replies, listening = probe.survey(tasks, "Status", timeout)
    # Status runs on the task's workers (its first one probes for GPUs); Ping is answered at
    # once, so a busy task still counts as up, and only a silent one as down.
    silent = [t for t in listening if replies[t] is None]
    alive = probe.up_tasks(silent, min(timeout, 1.0)) if silent else {}
    rows = []
    for t in tasks:
        row = _row(t, replies[t], secure)
        if t in alive:
            row.update(state="up", reason=f"busy: no answer to Status within {timeout:g} s")
        elif row["state"] == "down":
            row["reason"] = _why_down(t, replies[t], t in listening, secure)
        rows.append(row)
    return rows


def _row(task, reply, secure: bool) -> dict:
    from dtf.cli import probe

    ours = probe.is_task(reply, task)
    row = {"job": task.job, "index": task.index, "address": task.address, "host": task.host,
           "state": "up" if ours else "down", "pid": None, "secure": secure}
    if ours:
        row.update({"pid": reply.get("pid"), "uptime_s": reply.get("uptime_s"),
                    "max_rss_kb": reply.get("max_rss_kb"), "sessions": reply.get("sessions"),
                    "steps": reply.get("steps"), "graphs": reply.get("graphs"),
                    "variables": reply.get("variables"), "messages": reply.get("messages"),
                    "incarnation": reply.get("incarnation"), "last_error": reply.get("last_error"),
                    "gpus": reply.get("gpus")})
    return row


def _why_down(task, reply, listening: bool, secure: bool) -> str:
    """Why a task that gave no Status reply counts as down, as its port tells."""
    from dtf.wire import handshake

    if reply is not None:
        return f"another task answers on its port: {reply.get('task')}"
    if not listening:
        return "nothing listens on its port"
    # CURVE drops a handshake with other keys (or none) without a word: the greeting of
    # whatever listens tells a dtf task with other keys from some other program.
    mechanism = handshake.peer_mechanism(task.host, task.port)
    if mechanism is None:
        return "not a dtf task: another program holds its port"
    if mechanism == "CURVE":
        return ("wrong cluster keys: a task encrypted with other keys" if secure
                else "encrypted, and this cluster has no keys")
    if secure:
        return "serves plain (unencrypted); this cluster is encrypted"
    return "no answer"


# The table's columns, most important first: at a narrow width the last ones are left out
# (``--json`` always has everything). "last error" takes whatever width is left.
_ESSENTIAL = ("task", "state", "address", "pid")
_OPTIONAL = ("steps", "uptime", "memory", "sessions", "gpus")
_RIGHT = ("pid", "steps", "sessions", "gpus")
_ERROR_MIN_WIDTH = 16


def _cells(r) -> dict:
    memory = f"{r['max_rss_kb'] / 1024:.0f} MiB" if r.get("max_rss_kb") else ""
    return {"task": f"{r['job']}:{r['index']}", "state": r["state"], "address": r["address"],
            "pid": _text(r["pid"]), "uptime": duration(r.get("uptime_s")), "steps": _text(r.get("steps")),
            "memory": memory, "sessions": _text(r.get("sessions")), "gpus": _text(r.get("gpus")),
            "last error": _text(r.get("last_error") or r.get("reason"))}


def _error_width(cells: list) -> int:
    """The least width kept for the last error (longer ones wrap inside it)."""
    longest = max(len(c["last error"]) for c in cells) if cells else 0
    return max(len("last error"), min(longest, _ERROR_MIN_WIDTH))


def _columns(cells: list, width: int) -> list:
    """The columns that fit ``width`` with room for the last error, by priority."""
    def need(column):  # content + padding (2) + its border (1)
        return max([len(column)] + [len(c[column]) for c in cells]) + 3

    used = 1 + sum(need(c) for c in _ESSENTIAL) + _error_width(cells) + 3
    chosen = list(_ESSENTIAL)
    for column in _OPTIONAL:
        if not any(c[column] for c in cells):
            continue  # nothing to show (every task down): room for the reasons
        if used + need(column) > width:
            break  # not a less important one in its place
        chosen.append(column)
        used += need(column)
    return chosen + ["last error"]


def _table(cfg, rows, width: int) -> Table:
    from rich.text import Text

    up = sum(r["state"] == "up" for r in rows)
    counts = f": {up}/{len(rows)} tasks up"
    where = _fit_left(_short(cfg.path), width - len("cluster ") - len(counts))
    table = Table(title=f"cluster {escape(where)}{counts}", title_justify="left")
    cells = [_cells(r) for r in rows]
    columns = _columns(cells, width)
    for column in columns:
        last = column == "last error"
        table.add_column(column, justify="right" if column in _RIGHT else "left",
                         no_wrap=not last, overflow="fold" if last else "ellipsis",
                         min_width=_error_width(cells) if last else None)
    for c in cells:
        state = "[green]up[/]" if c["state"] == "up" else "[bold red]down[/]"
        table.add_row(*(state if k == "state" else Text(c[k]) for k in columns))
    return table


def _short(path) -> str:
    from pathlib import Path

    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _fit_left(text: str, width: int) -> str:
    """``text`` cut at its start to ``width`` characters ('…' first) when longer."""
    return text if len(text) <= width else "…" + text[len(text) - max(width, 2) + 1:]


def _text(value) -> str:
    return "" if value is None else str(value)
