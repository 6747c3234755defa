"""Rendezvous: where a step's tensors sent from other partitions wait for their _Recv.

Senders push (a tensor travels as soon as it is produced, in one message); receivers
never block the executor: they poll with ``try_recv`` and park until ``wait_any`` wakes.
"""
from __future__ import annotations

import collections
import threading
import time

from dtf.framework import errors
from dtf.runtime.executor import MISSING

IDLE_SLICE_S = 0.05


class StepRendezvous:
    def __init__(self, step_id, send_remote=None, local_task=""):
        self.step_id = step_id
        # Called (outside the lock) every IDLE_SLICE_S while a receive waits: the master
        # uses it to notice a failed or dead peer while its own partition is blocked.
        self.on_idle = None
        self._items: dict = {}
        self._cond = threading.Condition()
        self._error = None
        self._send_remote = send_remote
        self._local_task = local_task
        self._outbox: dict = {}  # task -> [(key, value)], sent by flush()

    def put(self, key, value):
        with self._cond:
            self._items[key] = value
            self._cond.notify_all()

    def send(self, key, value, dst_task):
        """Delivers ``value`` to the step's rendezvous on ``dst_task``: at once if local,
        else with the next ``flush``, so tensors ready together travel in one message."""
        if dst_task == self._local_task or self._send_remote is None:
            self.put(key, value)
        else:
            self._outbox.setdefault(dst_task, []).append((key, value))

    def flush(self):
        """Sends what ``send`` queued, one message per task. The executor flushes before it
        waits for anything and when the partition ends; kernels that block flush first."""
        if self._outbox:
            outbox, self._outbox = self._outbox, {}
            for task, items in outbox.items():
                self._send_remote(task, self.step_id, items)

    def try_recv(self, key):
        with self._cond:
            if self._error is not None:
                raise self._error
            return self._items.pop(key, MISSING)

    def recv(self, key, deadline=None):
        _, value = self.wait_any({key: 0}, deadline)
        return value

    def wait_any(self, parked: dict, deadline=None):
        """Blocks until one of the parked keys arrives: returns (step index, value)."""
        while True:
            with self._cond:
                if self._error is not None:
                    raise self._error
                for key, idx in parked.items():
                    if key in self._items:
                        return idx, self._items.pop(key)
                timeout = IDLE_SLICE_S
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        waiting = ", ".join(_describe_key(k) for k in parked)
                        raise errors.DeadlineExceededError(
                            None, None, f"Timed out waiting for tensors from other tasks: {waiting}")
                    timeout = min(timeout, left)
                self._cond.wait(timeout)
                arrived = any(k in self._items for k in parked) or self._error is not None
            if not arrived and self.on_idle is not None:
                self.on_idle()

    def abort(self, error):
        with self._cond:
            if self._error is None:
                self._error = error
            self._cond.notify_all()


def _describe_key(key: str) -> str:
    src, _, rest = key.partition(";")
    _, _, tensor = rest.partition(";")
    return f"{tensor} from {src}"


class RendezvousManager:
    """Step id -> StepRendezvous, created on first use by either side. Tensors that arrive
    for a step that already finished are dropped (bounded memory of finished ids)."""

    def __init__(self, send_remote=None, local_task=""):
        self._steps: dict = {}
        self._lock = threading.Lock()
        self._finished = collections.OrderedDict()
        self._send_remote = send_remote
        self._local_task = local_task

    def step(self, step_id) -> StepRendezvous:
        r = self._steps.get(step_id)
        if r is None:
            with self._lock:
                r = self._steps.get(step_id)
                if r is None:
                    r = self._steps[step_id] = StepRendezvous(step_id, self._send_remote, self._local_task)
        return r

    def put(self, step_id, key, value):
        if step_id in self._finished:
            return
        self.step(step_id).put(key, value)

    def finish(self, step_id):
        with self._lock:
            self._steps.pop(step_id, None)
            self._finished[step_id] = None
            while len(self._finished) > 4096:
                self._finished.popitem(last=False)

    def abort(self, step_id, error):
        self.step(step_id).abort(error)

    def active_steps(self):
        return len(self._steps)
