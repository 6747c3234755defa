"""``dtf run SCRIPT [ARGS...] [--on JOB|JOB:N | --estimator]``: run a job script once per task
of a job, each with TF_CONFIG naming its task, against the running cluster (started if it is
not). ``--estimator`` runs it once per chief, worker and evaluator task, the roles
``tf.estimator.train_and_evaluate`` gives them; the ps tasks are the cluster's servers."""
from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from collections import deque
from typing import List, Optional

import typer
from rich.text import Text

from dtf.cli import complete
from dtf.cli.console import ConfigOption, console, fail, load_config

# Read by dtf.train.progress_hooks in the replicas (the names are repeated, not imported:
# importing dtf.train would slow every dtf command down).
TRACE_STEP_ENV = "DTF_TRACE_STEP"
TRACE_OUT_ENV = "DTF_TRACE_OUT"


def run(script: str = typer.Argument(..., help="The job script (a Python file)."),
        args: Optional[List[str]] = typer.Argument(None, help="Arguments for the script."),
        on: str = typer.Option("worker", "--on", metavar="JOB|JOB:N",
                               help="Run once per task of JOB, or only on task JOB:N.",
                               autocompletion=complete.jobs_and_task_names),
        config: ConfigOption = None,
        timeout: float = typer.Option(30.0, help="Seconds to wait for the cluster to come up."),
        keep_going: bool = typer.Option(False, "--keep-going",
                                        help="When a replica fails, let the others go on."),
        trace: Optional[int] = typer.Option(None, "--trace", metavar="STEP", min=1,
                                            help="Write the Chrome trace of global step STEP "
                                                 "(chrome://tracing, Perfetto)."),
        trace_out: Optional[str] = typer.Option(None, "--trace-out", metavar="FILE",
                                                help="Where --trace writes [default: "
                                                     "trace-step-STEP.json]."),
        estimator: bool = typer.Option(False, "--estimator",
                                       help="Run once per chief, worker and evaluator task "
                                            "(tf.estimator.train_and_evaluate's roles).")):
    """Run a script once per task of a job (between-graph replication)."""
    from dtf.cli import keys, probe
    from dtf.cli.up import bring_up

    cfg = load_config(config)
    targets = _estimator_targets(cfg) if estimator else _targets(cfg, on)
    if not os.path.isfile(script):
        fail(f"no such script: {script}", 2)
    extra_env = _trace_env(trace, trace_out)
    key_file = keys.prepare_launch(cfg)  # the replicas inherit DTF_CLUSTER_KEYS from here
    tasks = cfg.tasks()
    if len(probe.up_tasks(tasks)) < len(tasks):
        console.print(f"cluster {cfg.path} is not up: starting it (dtf up)")
        bring_up(cfg, timeout, key_file)
    failed, stopped = _run_replicas(cfg, targets, [sys.executable, script, *(args or [])], keep_going,
                                    extra_env)
    if trace is not None:
        _say_trace(trace, extra_env[TRACE_OUT_ENV])
    if failed:
        also = (f"; stopped {', '.join(stopped)} (--keep-going lets the others finish)"
                if stopped else "")
        fail("replica " + ", ".join(f"{name} failed (exit code {code})" for name, code in failed) + also)
    console.print(f"{len(targets)} replica(s) of {script} finished")


def _trace_env(step, out) -> dict:
    """The replicas' environment for ``--trace STEP``: their TraceStepHook (added by
    MonitoredTrainingSession, as the progress hooks are) traces that global step into the
    file. An old file there is removed first: a replica's trace never replaces a file, so
    that of several replicas reaching the step only the first one's lands."""
    from rich.markup import escape

    if step is None:
        if out is not None:
            fail("--trace-out needs --trace STEP", 2)
        return {}
    path = os.path.abspath(out or f"trace-step-{step}.json")
    if not os.path.isdir(os.path.dirname(path)):
        fail(f"--trace-out {escape(path)}: no such folder", 2)
    if os.path.isdir(path):
        fail(f"--trace-out {escape(path)} is a folder; name a file", 2)
    if os.path.lexists(path):
        os.unlink(path)
    return {TRACE_STEP_ENV: str(step), TRACE_OUT_ENV: path}


def _say_trace(step, path):
    if os.path.exists(path):
        console.print(f"trace of global step {step} written to {path} (open it in chrome://tracing "
                      "or ui.perfetto.dev)", highlight=False, markup=False)
    else:
        console.print(f"warning: no replica traced global step {step}: the job ended before it, or "
                      "its replicas do not train in a MonitoredTrainingSession (which adds the "
                      "tracing hook)", style="yellow", highlight=False, markup=False)


def _targets(cfg, on: str) -> list:
    from rich.markup import escape

    from dtf.cli.config import TaskNameError

    job = on.partition(":")[0]
    if job in cfg.jobs and ":" not in on:
        return [t for t in cfg.all_tasks() if t.job == job]
    try:
        return [cfg.task(on)]
    except TaskNameError as e:
        fail(f"--on {escape(on)}: {escape(str(e))}", 2)


_ESTIMATOR_ROLES = ("chief", "worker", "evaluator")
# Tells train_and_evaluate that this task's server is already up (`dtf up` started it), so
# it uses that one instead of binding the same port itself.
SERVERS_UP_ENV = "DTF_SERVERS_UP"


def _estimator_targets(cfg) -> list:
    jobs = set(cfg.jobs)
    if "chief" not in jobs:
        fail(f"--estimator: {cfg.path} has no chief job; tf.estimator's cluster needs one "
             "(chief = [\"host:port\"]), plus ps, workers and an optional evaluator", 2)
    return [t for t in cfg.all_tasks() if t.job in _ESTIMATOR_ROLES]


def _tf_config(cfg, task) -> str:
    # The evaluator is outside the training cluster: cluster_dict() leaves it out, as TF does.
    return json.dumps({"cluster": cfg.cluster_dict(), "task": {"type": task.job, "index": task.index},
                       "rpc_layer": "grpc"})


def _run_replicas(cfg, targets, command, keep_going=False, extra_env=None):
    """Runs one process per target; returns ([(name, exit code)] of the failed ones, [names
    of the replicas stopped because another failed])."""
    from dtf.cli.live import Collector, Progress

    collector = Collector()
    lines: queue.Queue = queue.Queue()
    procs = {}
    try:
        for task in targets:
            env = {**os.environ, **cfg.env, "TF_CONFIG": _tf_config(cfg, task),
                   **collector.env(), **(extra_env or {}), "PYTHONUNBUFFERED": "1",
                   SERVERS_UP_ENV: "1"}
            proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, env=env)
            procs[task.name] = proc
            threading.Thread(target=_pump, args=(task.name, proc.stdout, lines), daemon=True).start()
        progress = Progress(procs)
        show = _LiveView(progress) if console.is_terminal else _PlainView(progress)
        supervisor = _Supervisor(procs, lines, collector, progress, show, keep_going)
        with show:
            codes = supervisor.run()
    except KeyboardInterrupt:
        _stop(procs)
        fail("interrupted; replicas stopped", 130)
    except BaseException:  # whatever ends this run stops its replicas first: none is orphaned
        _stop(procs)
        raise
    finally:
        collector.close()
    failed = [(name, code) for name, code in codes.items() if code != 0 and name not in supervisor.stopped]
    return failed, sorted(supervisor.stopped)


def _stop(procs):
    for proc in procs.values():
        if proc.poll() is None:
            proc.terminate()


def _pump(name, stream, lines):
    for raw in iter(stream.readline, b""):
        lines.put((name, raw.decode(errors="replace").rstrip("\n")))
    lines.put((name, None))


class _Supervisor:
    """Relays output and progress until every replica exited and its output is drained.

    A replica that fails is announced at once (its exit code, exception and last lines);
    then, unless ``keep_going``, the others are stopped: SIGTERM, SIGKILL after a grace."""

    _GRACE_S = 5.0
    _TAIL = 12

    def __init__(self, procs, lines, collector, progress, show, keep_going):
        self.procs, self.lines, self.collector = procs, lines, collector
        self.progress, self.show, self.keep_going = progress, show, keep_going
        self.stopped = set()  # replicas stopped because another failed
        self._recent = {name: deque(maxlen=self._TAIL) for name in procs}
        self._kill_at = None

    def run(self) -> dict:
        open_streams = set(self.procs)
        while open_streams:
            messages = self.collector.receive(50)
            for message in messages:
                self.show.lines(self.progress.update(message))
            if messages:
                self.show.reported()
            while True:
                try:
                    name, line = self.lines.get_nowait()
                except queue.Empty:
                    break
                if line is None:
                    open_streams.discard(name)
                    self._exited(name, self.procs[name].wait())
                else:
                    self._recent[name].append(line)
                    self.show.output(name, line)
            if self._kill_at is not None and time.monotonic() > self._kill_at:
                for name in self.stopped:
                    if self.procs[name].poll() is None:
                        self.procs[name].kill()
            self.show.refresh()
        for message in self.collector.receive(100):
            self.show.lines(self.progress.update(message))
        self.show.refresh(final=True)
        return {name: proc.wait() for name, proc in self.procs.items()}

    def _exited(self, name, code):
        self.progress.finished(name, code)
        if code == 0 or name in self.stopped:
            return
        self.show.failure(_failure_text(name, code, list(self._recent[name])))
        if self.keep_going:
            return
        for other, proc in self.procs.items():
            if other != name and proc.poll() is None and other not in self.stopped:
                proc.terminate()
                self.stopped.add(other)
                self.progress.finished(other, "stopped")
        if self.stopped and self._kill_at is None:
            self._kill_at = time.monotonic() + self._GRACE_S


def _failure_text(name, code, recent) -> str:
    """'worker:1 failed (exit code 1): ValueError: boom' and its last lines of output."""
    exception = next((line.strip() for line in reversed(recent) if _EXCEPTION.match(line.strip())), None)
    head = f"[{name}] FAILED (exit code {code})" + (f": {exception}" if exception else "")
    if not recent:
        return head
    return head + f"; its last lines:\n" + "\n".join(f"[{name}]   {line}" for line in recent)


_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b")


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

    def failure(self, text):
        self._live.console.print(Text(text, style="bold red"))

    def reported(self):
        pass

    def refresh(self, final=False):
        self._live.update(self._progress.table(self._live.console.width))


class _PlainView:
    """Plain lines (stdout is a file or a pipe): output, checkpoints, progress every few s.

    A progress line only follows news: reports that arrived after the replicas' last output
    line. A replica's own last words ("final global step 1001") are newer than the last
    report that got through (reports are rate-limited), so no stale "[progress] global
    step 989" may come after them."""

    def __init__(self, progress):
        self._progress = progress
        self._news = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def output(self, name, line):
        print(f"[{name}] {line}", flush=True)
        self._news = False

    def lines(self, texts):
        for text in texts:
            print(text, flush=True)

    def failure(self, text):
        print(text, flush=True)
        self._news = False

    def reported(self):
        self._news = True

    def refresh(self, final=False):
        if not self._news:
            return
        line = self._progress.plain_line(time.monotonic(), force=final)
        if line:
            print(line, flush=True)
