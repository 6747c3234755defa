"""How ``Peers`` reach one task: a backend chosen once per task, so that callers never
ask whether the task lives in this process.

The backends share one interface (as dask distributed's comm backends do) and are tried
in ``BACKENDS``' order; the first whose ``for_task`` answers reaches the task:

- ``InProcessRoute``: the task's service lives in this process (this task's own, or
  one in dtf.wire.inprocess' registry): messages are handled on the caller's thread,
  tensors go straight into its rendezvous, nothing is encoded;
- ``WireRoute``: any other task, over the transport (dtf.wire.transport: a lane on this
  host, TCP otherwise), with the liveness checks of ``Peers``.

Each has ``service`` (the in-process service, or None), ``call(msg, timeout_s)``,
``notify(msg)`` (best effort, not waited for), ``push(msg)`` (one-way),
``push_tensors(step_id, items)`` and ``gpu_count()``. They are ``Peers``' helpers, and
use its client, pool and liveness checks.
"""
from __future__ import annotations

import sys

from dtf.framework import errors
from dtf.wire import inprocess, transport


class InProcessRoute:
    """A task served by this process."""

    __slots__ = ("service", "push_tensors")

    def __init__(self, service):
        self.service = service
        # The rendezvous' own method, bound once: a step's tensors take no frame of ours.
        self.push_tensors = service.worker.rendezvous.put_many

    @staticmethod
    def for_task(peers, task):
        if task == peers._local_task and peers._local is not None:
            return InProcessRoute(peers._local)
        svc = inprocess.REGISTRY.lookup(peers.address(task))
        return None if svc is None else InProcessRoute(svc)

    def call(self, msg, timeout_s=None):
        # A direct call is not timed: it runs on this thread, as the caller's own code does.
        return self.service.dispatch(msg)

    def notify(self, msg):
        try:
            self.service.dispatch(msg)
        except errors.OpError:
            pass

    def push(self, msg):
        self.service.dispatch(msg)

    def gpu_count(self) -> int:
        return self.service.worker.gpu_count


class WireRoute:
    """A task in another process (or one of this process reached as if it were not)."""

    __slots__ = ("_peers", "_task", "_address")
    service = None

    def __init__(self, peers, task, address):
        self._peers, self._task, self._address = peers, task, address

    @staticmethod
    def for_task(peers, task):
        return WireRoute(peers, task, peers.address(task))

    def call(self, msg, timeout_s=None):
        peers = self._peers
        rid = peers._send(self._task, self._address, msg)
        return peers._receive(self._task, self._address, rid, timeout_s)

    def notify(self, msg):
        try:
            self._peers._pool.submit(self._quiet_call, msg)
        except RuntimeError:  # the pool has shut down, or the interpreter is exiting
            if sys.is_finalizing():
                # Still tell the task (a session's __del__ at exit deregisters its
                # graphs), without waiting for an answer no thread would read.
                try:
                    self._peers._send(self._task, self._address, msg)
                except errors.OpError:
                    pass

    def _quiet_call(self, msg):
        try:
            self.call(msg, timeout_s=transport.PING_TIMEOUT_S)
        except errors.OpError:
            pass

    def push(self, msg):
        self._peers._client.push(self._address, msg)

    def push_tensors(self, step_id, items):
        self._peers._client.push(self._address, {"type": "Tensor", "step_id": step_id,
                                                 "keys": [k for k, _ in items],
                                                 "tensors": [v for _, v in items]})

    def gpu_count(self) -> int:
        reply = self.call({"type": "Status"}, timeout_s=transport.PING_TIMEOUT_S * 3)
        return int(reply.get("gpus", 0))


# The backends, in the order they are tried.
BACKENDS = (InProcessRoute, WireRoute)


def choose(peers, task):
    """The route to ``task``: the first backend that reaches it."""
    for backend in BACKENDS:
        route = backend.for_task(peers, task)
        if route is not None:
            return route
    raise errors.InternalError(None, None, f"no backend reaches {task}")
