"""``dtf up``: start every task that is not running, wait until each answers, show them."""
from __future__ import annotations

import typer
from rich.markup import escape
from rich.table import Table

from dtf.cli.console import ConfigOption, console, fail, load_config


def up(config: ConfigOption = None,
       timeout: float = typer.Option(30.0, help="Seconds to wait for every task to answer."),
       slurm: bool = typer.Option(False, "--slurm", help="Start each task with srun on its node "
                                  "of this Slurm allocation (implied by [slurm] in cluster.toml).")):
    """Start the tasks that are not running, in the background."""
    from dtf.cli import keys

    cfg = load_config(config)
    if slurm or cfg.slurm is not None:
        _check_slurm(cfg)
    bring_up(cfg, timeout, keys.prepare_launch(cfg))


def _check_slurm(cfg):
    from dtf.cli import slurm

    if cfg.slurm is None:
        cfg.slurm = slurm.SlurmSettings()
    why = slurm.check_launch(cfg)
    if why is not None:
        fail(escape(f"cannot start {cfg.path} with srun: {why}"), 2)


def bring_up(cfg, timeout: float, key_file):
    """Starts the cluster and prints its table; exits non-zero naming any task that failed.

    ``key_file``: what keys.prepare_launch returned (None: plain mode)."""
    from dtf.cli import keys, launch

    outcomes = launch.start_cluster(cfg, timeout, key_file)
    console.print(_table(cfg, outcomes))
    console.print(f"security: {keys.describe(key_file)}")
    failed = [o for o in outcomes if o.state == "failed"]
    if failed:
        stopped = [o.task.name for o in outcomes if o.state == "stopped"]
        undone = (f"\nStopped again the tasks it had started ({', '.join(stopped)}): a cluster "
                  "starts whole or not at all." if stopped else "")
        fail("\n".join(_failure(cfg, o) for o in failed) + undone)
    return outcomes


def _failure(cfg, outcome) -> str:
    """One task's failure: what went wrong, and the end of its log when it got that far."""
    from dtf.cli import launch

    task = outcome.task
    text = f"task {task.name} ({task.address}) failed to start: {escape(outcome.detail.rstrip('.'))}."
    if outcome.tail is not None:
        text += f"\nLast lines of {escape(launch.log_location(cfg, task))}:\n{escape(outcome.tail)}"
    return text


def _table(cfg, outcomes) -> Table:
    from dtf.cli import launch, state

    table = Table(title=f"cluster {cfg.path}", title_justify="left")
    for column in ("task", "address", "state", "pid", "log"):
        table.add_column(column)
    style = {"running": "green", "started": "bold green", "failed": "bold red", "stopped": "yellow"}
    for o in outcomes:
        record = state.recorded(cfg, o.task) or {}
        label = "already running" if o.state == "running" else o.state
        table.add_row(o.task.name, o.task.address, f"[{style[o.state]}]{label}[/]",
                      str(record.get("pid", "")), launch.log_location(cfg, o.task))
    return table
