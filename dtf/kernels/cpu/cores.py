"""How many threads this process's kernels may use at once (``intra_op.THREADS``).

By default, the cores the process may run on, divided among the compute tasks of its
cluster that share its host: several task processes started on one machine (``dtf up``,
or a test's ps + workers on 127.0.0.1) each sized their kernels for every core, so two
workers on two cores ran four compute threads, each convolution's team waiting for a
thread that had lost its core. With one thread per worker the between-graph CNN of
bench.dist_cnn (1 ps + 2 workers, 2 cores) trained 31.7-32.1 global steps/s against
27.1-28.4. Parameter-server tasks are not counted among the sharers: a ps mostly waits
for its workers, and a lone worker beside its ps lost a third of its speed with one thread
(26.5 -> 17 global steps/s). A server sets the count (``share_host``) before any kernel
module loads; ``DTF_INTRA_OP_THREADS`` overrides it.

This module imports nothing of the kernels, so a server can set it first.
"""
from __future__ import annotations

import logging
import os
import socket
import sys

log = logging.getLogger("dtf.kernels.cores")

# Jobs whose tasks are not counted among those sharing a host's cores (see above).
WAITING_JOBS = frozenset({"ps"})

_sharers = 1


def process_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def threads() -> int:
    """The kernels' thread budget: ``DTF_INTRA_OP_THREADS``, else this process's cores over
    the compute tasks sharing its host (at least one)."""
    named = int(os.environ.get("DTF_INTRA_OP_THREADS", "0") or 0)
    if named > 0:
        return named
    return max(1, process_cores() // _sharers)


def _local_hosts():
    names = {"localhost", "127.0.0.1", "::1", "0.0.0.0", "::", ""}
    try:
        names.add(socket.gethostname().lower())
    except OSError:
        pass
    return names


def _host(address: str) -> str:
    host = address.rsplit(":", 1)[0] if ":" in address else address
    host = host.strip("[]").lower()
    if host in _local_hosts() or host.startswith("127."):
        return "local"
    return host


def compute_tasks_on_host(jobs: dict, own_address: str) -> int:
    """How many tasks of ``jobs`` ({job: {index: "host:port"}}) outside WAITING_JOBS run
    on the host of ``own_address`` (at least one)."""
    host = _host(own_address)
    count = sum(1 for job, tasks in jobs.items() if job not in WAITING_JOBS
                for address in tasks.values() if _host(address) == host)
    return max(1, count)


def share_host(sharers: int):
    """Divides this process's cores among ``sharers`` compute tasks; only before the
    kernels load (their thread pool is sized once)."""
    global _sharers
    if "dtf.kernels.cpu.intra_op" in sys.modules:
        log.debug("kernels already loaded: their %d threads stay", threads())
        return
    _sharers = max(1, int(sharers))
