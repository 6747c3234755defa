"""A task in the foreground: ``python -m dtf.runtime.standalone --cluster_spec=... --job_name=...
--task_index=N`` (the classic standalone-server flags). ``dtf server`` runs the same code.

Prints one line "dtf server <task> listening on <address> pid <pid>" once it serves, and
stops cleanly on SIGTERM or SIGINT.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time


def serve(cluster_spec, job_name: str, task_index: int, ready_message=True):
    from dtf.train.server import Server

    server = Server(cluster_spec, job_name=job_name, task_index=task_index)
    stop = threading.Event()

    def on_signal(signum, frame):
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if ready_message:
        print(f"dtf server /job:{job_name}/task:{task_index} listening on "
              f"{server.target[len('grpc://'):]} pid {os.getpid()}", flush=True)
    _log_to_stderr()
    from dtf.kernels.cpu import jit_loading

    jit_loading.preload_for_server()
    next_summary = time.monotonic() + SUMMARY_EVERY_S
    while not stop.wait(0.5):
        if time.monotonic() >= next_summary:
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


def main(argv=None):
    p = argparse.ArgumentParser(prog="dtf-server", description=__doc__)
    p.add_argument("--cluster_spec", required=True,
                   help="e.g. 'worker|w0:2222;w1:2222,ps|ps0:2222'")
    p.add_argument("--job_name", required=True)
    p.add_argument("--task_index", type=int, default=0)
    args = p.parse_args(argv)
    from dtf.train.cluster_spec import ClusterSpec

    try:
        spec = ClusterSpec.from_flags_string(args.cluster_spec)
        return serve(spec, args.job_name, args.task_index)
    except (ValueError, TypeError) as e:
        print(f"dtf server: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - e.g. the port is taken: one line, no traceback
        print(f"dtf server: {getattr(e, 'message', e)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
