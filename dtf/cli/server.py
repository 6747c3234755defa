"""``dtf server``: one task in the foreground (what ``dtf up`` launches in the background).

Takes the task from cluster.toml (``--job J --task N``) or, for scripts written against the
classic standalone server, from ``--cluster_spec='worker|w0:2222;w1:2222,ps|ps0:2222'
--job_name=worker --task_index=0`` (``python -m dtf server ...`` where no ``dtf`` script is
installed). This is the one parser of those flags.

Prints one line "dtf server <task> listening on <address> pid <pid>" once it serves, and
stops cleanly on SIGTERM or SIGINT.
"""
from __future__ import annotations

import os
import select
import signal
import socket
import time
from typing import Optional

import typer

from dtf.cli.console import ConfigOption, fail, load_config


def server(job: Optional[str] = typer.Option(None, "--job", help="Job of the task to serve."),
           task: Optional[int] = typer.Option(None, "--task", min=0, help="Index of the task in its job."),
           config: ConfigOption = None,
           cluster_spec: Optional[str] = typer.Option(
               None, "--cluster_spec", "--cluster-spec",
               help="Classic flag: 'worker|w0:2222;w1:2222,ps|ps0:2222' (instead of -c)."),
           job_name: Optional[str] = typer.Option(None, "--job_name", "--job-name", help="Classic flag: the job."),
           task_index: Optional[int] = typer.Option(None, "--task_index", "--task-index", min=0,
                                                    help="Classic flag: the task index [default: 0].")):
    """Serve one task in the foreground until SIGTERM or Ctrl-C."""
    if cluster_spec is not None:
        spec = _classic_spec(cluster_spec)
        job = job_name or job
        index = task_index if task_index is not None else (task or 0)
    else:
        if job is None and job_name is None:
            fail("name the task to serve: --job JOB --task N (with -c cluster.toml), or the "
                 "classic --cluster_spec=... --job_name=... --task_index=...", 2)
        from dtf.cli import keys

        cfg = load_config(config)
        keys.prepare_launch(cfg)  # the task serves with the cluster's keys, as `dtf up` would
        job = job or job_name
        index = task if task is not None else (task_index or 0)
        spec = cfg.cluster_dict()
        if job not in spec or index >= len(spec[job]):
            fail(f"no task {job}:{index} in {cfg.path} (jobs: "
                 + ", ".join(f"{j} with {len(a)} task(s)" for j, a in sorted(spec.items())) + ")", 2)
    if job is None:
        fail("--cluster_spec needs --job_name (and --task_index, default 0)", 2)
    raise typer.Exit(_serve(spec, job, index))


def _classic_spec(flags: str):
    from dtf.train.cluster_spec import ClusterSpec

    try:
        return ClusterSpec.from_flags_string(flags)
    except (ValueError, TypeError) as e:
        fail(f"bad --cluster_spec: {e}", 2)


def _serve(spec, job: str, index: int) -> int:
    try:
        return serve(spec, job, index)
    except (ValueError, TypeError) as e:
        fail(f"cannot serve /job:{job}/task:{index}: {e}", 2)
    except Exception as e:  # noqa: BLE001 - e.g. the port is taken: one paragraph, no traceback
        fail(f"cannot serve /job:{job}/task:{index}: {getattr(e, 'message', e)}", 1)


def serve(cluster_spec, job_name: str, task_index: int, ready_message=True):
    from dtf.train.server import Server

    server = Server(cluster_spec, job_name=job_name, task_index=task_index)
    # A signal only wakes the loop below through this socket: a handler that set a
    # threading.Event could run while the main thread holds that Event's lock (inside its
    # wait) and deadlock, so SIGTERM would never stop the task.
    woken, waker = socket.socketpair()
    waker.setblocking(False)
    signal.set_wakeup_fd(waker.fileno())
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda signum, frame: None)  # the wake-up byte does the work
    if ready_message:
        print(f"dtf server /job:{job_name}/task:{task_index} listening on "
              f"{server.target[len('grpc://'):]} pid {os.getpid()}", flush=True)
    _log_to_stderr()
    from dtf.kernels.cpu import jit_loading

    jit_loading.preload_for_server()
    next_summary = time.monotonic() + SUMMARY_EVERY_S
    while not select.select([woken], [], [], max(0.0, next_summary - time.monotonic()))[0]:
        next_summary += SUMMARY_EVERY_S
        _log_summary(server)
    _log_summary(server)
    server.stop()
    return 0


SUMMARY_EVERY_S = 60.0  # how often the task's log says how many steps it served (if any)


def _log_to_stderr():
    """The task's log (stderr, which `dtf up` sends to its log file): failed steps at
    warning level, step counts at info, each line with its time."""
    import logging

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")


def _log_summary(server):
    import logging

    service = server._service
    line = service.step_log.summary(service.worker.steps_run)
    if line:
        logging.getLogger("dtf.server").info("%s", line)
