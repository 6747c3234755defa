"""The one rich Console every command prints through, and the way commands fail."""
from __future__ import annotations

import sys
from typing import Annotated, Optional

import typer
from rich.console import Console

# Piped output is read by people too: do not squeeze tables into 80 columns there.
_WIDTH = None if sys.stdout.isatty() else 200
console = Console(highlight=False, width=_WIDTH)
err_console = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 200)


def fail(message: str, code: int = 1):
    """Prints ``message`` (a paragraph, no traceback) to stderr and exits with ``code``."""
    err_console.print(f"[bold red]dtf:[/] {message}", markup=True, soft_wrap=True)
    raise typer.Exit(code)


def load_config(config_option):
    """Loads cluster.toml (or -c PATH), turning every problem into ``fail``."""
    from dtf.cli import config

    try:
        return config.load(config.config_path(config_option))
    except config.ConfigError as e:
        fail(_escape(str(e)), 2)


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


ConfigOption = Annotated[Optional[str], typer.Option(
    "--config", "-c", metavar="PATH", show_default=False,
    help="The cluster file [default: ./cluster.toml].")]


def duration(seconds) -> str:
    """12.3 -> '12s', 754 -> '12m34s', 7300 -> '2h01m'."""
    if seconds is None:
        return ""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"
