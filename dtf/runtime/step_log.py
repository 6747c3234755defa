"""What a task's log says about the steps its master serves: each failed step at warning
level (the error, the op, the session it ran for) and, every so often, how many steps ran.

Without it a task's log held one "listening" line while its errors reached only the
client and the "last error" column of ``dtf status``. Both step paths of the master are
wrapped here (the threaded ``RunStep`` handler and the I/O thread's deferred one), so the
master's own code stays free of logging.
"""
from __future__ import annotations

import logging
import threading

from dtf.framework import errors

log = logging.getLogger("dtf.server")
# A library logs nothing by itself: a task started by `dtf server` configures logging (its
# log file); a script's own servers stay quiet unless the script configures logging.
log.addHandler(logging.NullHandler())


def _op_name(e) -> str | None:
    for where in (e.op, e.node_def):
        name = where if isinstance(where, str) else getattr(where, "name", None)
        if name:
            return name
    return None


class StepLog:
    """Counts a master's steps (``steps``, of which ``failed`` failed) and logs the failed
    ones."""

    def __init__(self, task: str):
        self.task = task
        self.steps = 0
        self.failed = 0
        self._reported = (0, 0, 0)
        self._lock = threading.Lock()

    def wrap_run(self, run_step):
        """The RunStep handler ``run_step`` (msg -> reply), counted and logged."""
        def logged(msg):
            try:
                reply = run_step(msg)
            except errors.OpError as e:
                self._failed(msg, e)
                raise
            self._count()
            return reply
        return logged

    def wrap_start(self, start_step):
        """The deferred RunStep handler ``start_step`` (msg, respond, loop), its answer
        counted and logged."""
        def logged(msg, respond, loop):
            def answer(result):
                if isinstance(result, errors.OpError):
                    self._failed(msg, result)
                elif not isinstance(result, BaseException):
                    self._count()
                respond(result)
            return start_step(msg, answer, loop)
        return logged

    def _count(self):
        with self._lock:
            self.steps += 1

    def _failed(self, msg, e):
        with self._lock:
            self.steps += 1
            self.failed += 1
        op = _op_name(e)
        first_line = (e.message or "").splitlines()[0] if e.message else ""
        # The end of an input (a queue closed and drained) ends training loops normally.
        level = logging.INFO if isinstance(e, errors.OutOfRangeError) else logging.WARNING
        log.log(level, "%s: a step of session %s failed%s: %s: %s", self.task, msg.get("session"),
                    f" at op {op!r}" if op else "", type(e).__name__, first_line)

    def summary(self, partitions: int = 0) -> str | None:
        """'N steps served (F failed), P partitions run' when the counts moved since the
        last summary; ``partitions``: the task's worker's count (a ps runs only those)."""
        with self._lock:
            counts = (self.steps, self.failed, partitions)
            if counts == self._reported:
                return None
            self._reported = counts
        return (f"{self.task}: {counts[0]} steps served ({counts[1]} failed), {counts[2]} "
                "graph partitions run since it started")
