"""``dtf status``: one row per task from its Status message; exit 1 when any is down."""
from __future__ import annotations

import json

import typer
from rich.markup import escape
from rich.table import Table

from dtf.cli.console import ConfigOption, console, duration, load_config

_COLUMNS = ("job", "index", "address", "state", "pid", "host", "uptime", "memory", "gpus",
            "sessions", "steps", "last error")


def status(config: ConfigOption = None,
           as_json: bool = typer.Option(False, "--json", help="Print a JSON list instead of a table."),
           timeout: float = typer.Option(2.0, help="Seconds to wait for each task's answer.")):
    """Show every task of the cluster: up or down, pid, uptime, memory, steps served."""
    from dtf.cli import keys

    cfg = load_config(config)
    key_file = keys.prepare_client(cfg)
    rows = collect(cfg, timeout, secure=key_file is not None)
    if as_json:
        print(json.dumps(rows, indent=2))
    else:
        console.print(_table(cfg, rows))
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
            row["reason"] = _why_down(replies[t], t in listening)
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


def _why_down(reply, listening: bool) -> str:
    if reply is not None:
        return f"another task answers on its port: {reply.get('task')}"
    if listening:  # CURVE drops a handshake with other keys (or none) without a word
        return "no answer (wrong cluster keys?)"
    return "nothing listens on its port"


def _table(cfg, rows) -> Table:
    up = sum(r["state"] == "up" for r in rows)
    table = Table(title=f"cluster {cfg.path}: {up}/{len(rows)} tasks up", title_justify="left")
    for column in _COLUMNS:
        table.add_column(column, justify="right" if column in ("index", "pid", "gpus", "sessions", "steps")
                         else "left")
    for r in rows:
        memory = f"{r['max_rss_kb'] / 1024:.0f} MiB" if r.get("max_rss_kb") else ""
        state = "[green]up[/]" if r["state"] == "up" else "[bold red]down[/]"
        table.add_row(r["job"], str(r["index"]), r["address"], state, _text(r["pid"]), r["host"],
                      duration(r.get("uptime_s")), memory, _text(r.get("gpus")), _text(r.get("sessions")),
                      _text(r.get("steps")), escape(_text(r.get("last_error") or r.get("reason"))))
    return table


def _text(value) -> str:
    return "" if value is None else str(value)
