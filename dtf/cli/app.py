"""The ``dtf`` command: the typer app and ``main()`` (the console script).

Only typer and rich load at start: each command imports numpy, zmq or the runtime itself,
so ``dtf --help`` stays quick and ``dtf status`` never loads the kernels.
"""
from __future__ import annotations

import typer

from dtf.cli import down, hello, logs, run, server, status, up

app = typer.Typer(
    name="dtf", no_args_is_help=True, add_completion=True, pretty_exceptions_enable=False,
    rich_markup_mode=None, context_settings={"help_option_names": ["-h", "--help"]},
    help="Start, inspect and stop a dtf cluster (cluster.toml), and run TF1 job scripts on it.")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dtf")
    except PackageNotFoundError:  # run from a source tree that was never installed
        import dtf

        return dtf.__version__


def _print_version(value: bool):
    if value:
        print(f"dtf {_version()}")
        raise typer.Exit()


@app.callback()
def _options(version: bool = typer.Option(False, "--version", is_eager=True, callback=_print_version,
                                          help="Print dtf's version and exit.")):
    """Start, inspect and stop a dtf cluster (cluster.toml), and run TF1 job scripts on it."""


def _command(function, **settings):
    # The whole first line of the docstring in `dtf --help` (click would cut it with "...").
    app.command(short_help=function.__doc__.strip().splitlines()[0], **settings)(function)


_command(up.up)
_command(status.status)
_command(down.down)
_command(run.run, context_settings={"ignore_unknown_options": True})
_command(logs.logs)
_command(server.server)
_command(hello.hello)


def main():
    app(prog_name="dtf")
