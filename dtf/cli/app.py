"""The ``dtf`` command: the typer app and ``main()`` (the console script).

Only typer and rich load at start: each command imports numpy, zmq or the runtime itself,
so ``dtf --help`` stays quick and ``dtf status`` never loads the kernels.
"""
from __future__ import annotations

import typer

from dtf.cli import down, hello, logs, run, server, status, up

app = typer.Typer(
    name="dtf", no_args_is_help=True, add_completion=True, pretty_exceptions_enable=False,
    rich_markup_mode=None,
    help="Start, inspect and stop a dtf cluster (cluster.toml), and run TF1 job scripts on it.")

app.command()(up.up)
app.command()(status.status)
app.command()(down.down)
app.command(context_settings={"ignore_unknown_options": True})(run.run)
app.command()(logs.logs)
app.command()(server.server)
app.command()(hello.hello)


def main():
    app(prog_name="dtf")
