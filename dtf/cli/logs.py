"""``dtf logs JOB:N [-f]``: print a task's log, and with -f keep following it."""
from __future__ import annotations

import sys
import time

import typer

from rich.markup import escape

from dtf.cli import complete
from dtf.cli.console import ConfigOption, fail, load_config


def logs(task: str = typer.Argument(..., metavar="JOB:N", help="The task, e.g. worker:0.",
                                    autocompletion=complete.task_names),
         follow: bool = typer.Option(False, "--follow", "-f", help="Keep printing new lines."),
         lines: int = typer.Option(0, "--lines", "-n", help="Only the last N lines (0: all)."),
         config: ConfigOption = None):
    """Show the log of one task."""
    from dtf.cli import config as config_mod
    from dtf.cli import state

    cfg = load_config(config)
    try:
        target = cfg.task(task)
    except config_mod.TaskNameError as e:
        fail(f"dtf logs {escape(task)}: {escape(str(e))}", 2)
    if not config_mod.is_local_host(target.host):
        _print_remote(cfg, target, follow, lines)
        return
    path = state.log_path(cfg, target)
    if not path.exists():
        fail(f"no log for {target.name} yet ({path} does not exist); start it with `dtf up`", 1)
    try:
        _print_file(path, follow, lines)
    except KeyboardInterrupt:
        pass


def _print_remote(cfg, target, follow: bool, lines: int):
    from dtf.cli import ssh

    try:
        ssh.print_log(cfg.ssh_for(target.host), target, follow, lines)
    except ssh.SshError as e:
        fail(f"cannot read the log of {target.name}: {escape(str(e))}", 1)
    except KeyboardInterrupt:
        pass


def _print_file(path, follow: bool, lines: int):
    with open(path, "rb") as f:
        data = f.read()
        if lines:
            data = b"\n".join(data.splitlines()[-lines:]) + b"\n"
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        while follow:
            chunk = f.read()
            if chunk:
                sys.stdout.buffer.write(chunk)
                sys.stdout.flush()
            else:
                time.sleep(0.2)
