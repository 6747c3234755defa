"""``dtf up``: start every task that is not running, wait until each answers, show them."""
from __future__ import annotations

import typer
from rich.markup import escape
from rich.table import Table

from dtf.cli.console import ConfigOption, console, fail, load_config


def up(config: ConfigOption = None,
       timeout: float = typer.Option(30.0, help="Seconds to wait for every task to answer.")):
    """Start the cluster's tasks in the background (those not already running)."""
    cfg = load_config(config)
    bring_up(cfg, timeout)


def bring_up(cfg, timeout: float):
    """Starts the cluster and prints its table; exits non-zero naming any task that failed."""
    from dtf.cli import launch, state

    outcomes = launch.start_cluster(cfg, timeout)
    console.print(_table(cfg, outcomes))
    failed = [o for o in outcomes if o.state == "failed"]
    if failed:
        parts = [f"task {o.task.name} ({o.task.address}) failed to start: {escape(o.detail)}.\n"
                 f"Last lines of {state.log_path(cfg, o.task)}:\n"
                 f"{escape(state.tail(state.log_path(cfg, o.task)))}" for o in failed]
        fail("\n".join(parts))
    return outcomes


def _table(cfg, outcomes) -> Table:
    from dtf.cli import state

    table = Table(title=f"cluster {cfg.path}", title_justify="left")
    for column in ("task", "address", "state", "pid", "log"):
        table.add_column(column)
    style = {"running": "green", "started": "bold green", "failed": "bold red"}
    for o in outcomes:
        record = state.recorded(cfg, o.task) or {}
        label = "already running" if o.state == "running" else o.state
        table.add_row(o.task.name, o.task.address, f"[{style[o.state]}]{label}[/]",
                      str(record.get("pid", "")), _relative(state.log_path(cfg, o.task)))
    return table


def _relative(path) -> str:
    import os

    return os.path.relpath(path)
