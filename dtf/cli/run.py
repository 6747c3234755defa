"""``dtf run SCRIPT [ARGS...] [--on JOB|JOB:N]``: run a job script once per task of a job,
each with TF_CONFIG naming its task, against the running cluster (started if it is not)."""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from typing import List, Optional

import typer
from rich.text import Text

from dtf.cli.console import ConfigOption, console, fail, load_config


def run(script: str = typer.Argument(..., help="The job script (a Python file)."),
        args: Optional[List[str]] = typer.Argument(None, help="Arguments for the script."),
        on: str = typer.Option("worker", "--on", metavar="JOB|JOB:N",
                               help="Run once per task of JOB, or only on task JOB:N."),
        config: ConfigOption = None,
        timeout: float = typer.Option(30.0, help="Seconds to wait for the cluster to come up.")):
    """Run a job script once per task of a job (between-graph replication)."""
    from dtf.cli import keys, probe
    from dtf.cli.up import bring_up

    cfg = load_config(config)
    targets = _targets(cfg, on)
    if not os.path.isfile(script):
        fail(f"no such script: {script}", 2)
    key_file = keys.prepare_launch(cfg)  # the replicas inherit DTF_CLUSTER_KEYS from here
    tasks = cfg.tasks()
    if len(probe.up_tasks(tasks)) < len(tasks):
        console.print(f"cluster {cfg.path} is not up: starting it (dtf up)")
        bring_up(cfg, timeout, key_file)
    failed = _run_replicas(cfg, targets, [sys.executable, script, *(args or [])])
    if failed:
        fail("replica " + ", ".join(f"{name} failed (exit code {code})" for name, code in failed))
    console.print(f"{len(targets)} replica(s) of {script} finished")


def _targets(cfg, on: str) -> list:
    from dtf.cli.config import ConfigError

    job = on.partition(":")[0]
    if job not in cfg.jobs:
        fail(f"--on {on}: no job {job!r} in {cfg.path} (jobs: {', '.join(sorted(cfg.jobs))})", 2)
    if ":" not in on:
        return [t for t in cfg.tasks() if t.job == job]
    try:
        return [cfg.task(on)]
    except ConfigError as e:
        fail(f"--on {on}: {e}", 2)


def _tf_config(cfg, task) -> str:
    return json.dumps({"cluster": cfg.cluster_dict(), "task": {"type": task.job, "index": task.index},
                       "rpc_layer": "grpc"})


def _run_replicas(cfg, targets, command) -> list:
    """Runs one process per target; returns [(name, exit code)] of the failed ones."""
    from dtf.cli.live import Collector, Progress

    collector = Collector()
    lines: queue.Queue = queue.Queue()
    procs = {}
    try:
        for task in targets:
            env = {**os.environ, **cfg.env, "TF_CONFIG": _tf_config(cfg, task),
                   **collector.env(), "PYTHONUNBUFFERED": "1"}
            proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, env=env)
            procs[task.name] = proc
            threading.Thread(target=_pump, args=(task.name, proc.stdout, lines), daemon=True).start()
        progress = Progress(procs)
        show = _LiveView(progress) if console.is_terminal else _PlainView(progress)
        with show:
            codes = _supervise(procs, lines, collector, progress, show)
    except KeyboardInterrupt:
        _stop(procs)
        fail("interrupted; replicas stopped", 130)
    except BaseException:  # whatever ends this run stops its replicas first: none is orphaned
        _stop(procs)
        raise
    finally:
        collector.close()
    return [(name, code) for name, code in codes.items() if code != 0]


def _stop(procs):
    for proc in procs.values():
        if proc.poll() is None:
            proc.terminate()


def _pump(name, stream, lines):
    for raw in iter(stream.readline, b""):
        lines.put((name, raw.decode(errors="replace").rstrip("\n")))
    lines.put((name, None))


def _supervise(procs, lines, collector, progress, show) -> dict:
    """Relays output and progress until every replica exited and its output is drained."""
    open_streams = set(procs)
    while open_streams:
        for message in collector.receive(50):
            show.lines(progress.update(message))
        while True:
            try:
                name, line = lines.get_nowait()
            except queue.Empty:
                break
            if line is None:
                open_streams.discard(name)
                progress.finished(name, procs[name].wait())
            else:
                show.output(name, line)
        show.refresh()
    for message in collector.receive(100):
        show.lines(progress.update(message))
    show.refresh(final=True)
    return {name: proc.wait() for name, proc in procs.items()}


class _LiveView:
    """A rich Live table under the replicas' output (stdout is a terminal)."""

    def __init__(self, progress):
        from rich.live import Live

        self._progress = progress
        self._live = Live(progress.table(), console=console, refresh_per_second=4, transient=False)

    def __enter__(self):
        self._live.__enter__()
        return self

    def __exit__(self, *exc):
        return self._live.__exit__(*exc)

    def output(self, name, line):
        self._live.console.print(Text(f"[{name}] {line}"))

    def lines(self, texts):
        for text in texts:
            self._live.console.print(Text(text, style="cyan"))

    def refresh(self, final=False):
        self._live.update(self._progress.table())


class _PlainView:
    """Plain lines (stdout is a file or a pipe): output, checkpoints, progress every few s."""

    def __init__(self, progress):
        self._progress = progress

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def output(self, name, line):
        print(f"[{name}] {line}", flush=True)

    def lines(self, texts):
        for text in texts:
            print(text, flush=True)

    def refresh(self, final=False):
        line = self._progress.plain_line(time.monotonic(), force=final)
        if line:
            print(line, flush=True)
