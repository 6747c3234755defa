"""Rendezvous: where a step's tensors sent from other partitions wait for their _Recv.

Senders push (a tensor travels as soon as it is produced, in one message); receivers
never block the executor: they poll with ``try_recv`` and park until ``wait_any`` wakes,
or, for a step that runs in pieces, until the callback of ``take_any_or_notify`` runs.

Delivery modes: how a tensor reaches a step waiting on another task. The master picks one
per step (step_machine.StepMachine.start), the receiving side sets up its rendezvous from
the RunGraph's mark (worker.Worker._graph_step, start_graph):

=========  ====================  ===============================  ==========================
mode       chosen when           the sender                       the waiting side
=========  ====================  ===============================  ==========================
push       always (default)      ``flush`` pushes a ``Tensor``    its I/O thread stores it
                                 message per task                 (``put_many``): a parked
                                                                  step resumes, a blocked
                                                                  thread's condition wakes
fold       the master's I/O      the partition's *last* sends to  the master stores them
           thread runs the step  the master's task go in its      (``tensor_push``) before
           (RunGraph ``fold``),  RunGraph reply (``fold_task``,   it counts the reply
           one partition there   ``folded``): one message fewer
early      a master thread       sends to the master's task go    the thread waiting in the
           waits in its own      back as interim replies on the   master's partition polls
           partition (RunGraph   request's connection             those connections and a
           ``early``), one part  (``early_task``, ``send_early``  wake-up (``WaitHooks.
           per remote task,      from the loop's ``respond``)     pump``): no I/O thread
           run on the remote                                      hand-off on either side
           I/O thread
=========  ====================  ===============================  ==========================

In both fold and early, the partition's last sends to the master's task ride in its reply
(the master's I/O thread or its waiting thread takes them from there): a synchronous
worker's token from the ps costs no message of its own.

Beside the mode, a wait on a master's own thread runs ``WaitHooks.on_idle`` every
IDLE_SLICE_S without a tensor: the master reads replies that arrived and pings its peers
there, so a failure elsewhere aborts the wait. The hooks are handed to the worker as an
argument (``Worker.run_graph(msg, hooks)``), never inside the message.
"""
from __future__ import annotations

import collections
import threading
import time
from typing import Protocol

from dtf.framework import errors
from dtf.runtime.executor import MISSING

IDLE_SLICE_S = 0.05
# A step's tensors (or its abort) that arrived here although no partition of the step
# started within this long belong to a step that will never run on this task (its
# master died, or it failed elsewhere first): they are dropped.
ORPHAN_S = 300.0
_SWEEP_EVERY_S = 30.0


class WaitHooks(Protocol):
    """What a master's thread that waits in its own partition lends the partition's
    rendezvous (blocking_step.BlockingStep is one): ``on_idle()``, called (outside the lock)
    every IDLE_SLICE_S while a receive waits, notices a failed or dead peer; ``pump`` (or
    None) owns the thread's sockets: ``pump.wait(timeout_s)`` polls them (tensors sent
    ahead of a reply reach the wait without a thread hand-off), ``pump.wake()`` interrupts
    it when another thread puts a tensor here, ``pump.owner`` is the thread it belongs to."""

    pump: object

    def on_idle(self) -> None: ...


class StepRendezvous:
    def __init__(self, step_id, send_remote=None, local_task=""):
        self.step_id = step_id
        # From the WaitHooks of a master in this process whose partition waits here on the
        # thread that sent the step's RunGraphs (see the module's delivery modes).
        self.on_idle = None
        self.pump = None
        self._pumping = False
        self._items: dict = {}
        self._lock = threading.Lock()
        # Made when a thread first waits here: most steps never block a thread (servers
        # park them), and a Condition costs more to make and to enter than the plain lock.
        self._cond = None
        self._error = None
        self._send_remote = send_remote
        self._local_task = local_task
        self._outbox: dict = {}  # task -> [(key, value)], sent by flush()
        # The task whose master asked for this step's partition here: the partition's last
        # sends to it ride in the RunGraph reply instead of a message of their own.
        self.fold_task = None
        self.folded: list = []
        # The task whose master asked for this partition over the wire with "early": sends
        # to it go back ahead of the RunGraph reply (``send_early(message)``), to the thread
        # awaiting that reply, instead of to its I/O thread.
        self.early_task = None
        self.send_early = None
        self._waiter = None  # (parked keys, callback) of a step that returned instead of waiting
        self.created = time.monotonic()
        self.started = False  # a partition of the step has started on this task

    def put(self, key, value):
        self.put_many(((key, value),))

    def put_many(self, items):
        """Stores tensors; a parked step waiting for one of them is woken once."""
        wake = None
        with self._lock:
            for key, value in items:
                self._items[key] = value
            if self._cond is not None:
                self._cond.notify_all()
            if self._waiter is not None:
                parked = self._waiter[0]
                for key, _ in items:
                    if key in parked:
                        wake, self._waiter = self._waiter[1], None
                        break
            pumping = self._pumping
        if wake is not None:
            wake()  # outside the lock: it may resume the step on this thread
        if pumping:
            self.pump.wake()

    def send(self, key, value, dst_task):
        """Delivers ``value`` to the step's rendezvous on ``dst_task``: at once if local,
        else with the next ``flush``, so tensors ready together travel in one message."""
        if dst_task == self._local_task or self._send_remote is None:
            self.put(key, value)
        else:
            self._outbox.setdefault(dst_task, []).append((key, value))

    def flush(self, last=False):
        """Sends what ``send`` queued, one message per task. The executor flushes before it
        waits for anything and when the partition ends (``last``); kernels that block flush
        first. The last sends to ``fold_task`` are kept in ``folded`` for the reply."""
        if self._outbox:
            outbox, self._outbox = self._outbox, {}
            if last and self.fold_task is not None:
                self.folded.extend(outbox.pop(self.fold_task, ()))
            for task, items in outbox.items():
                if task == self.early_task:
                    self.send_early({"type": "Tensor", "step_id": self.step_id,
                                     "keys": [k for k, _ in items], "tensors": [v for _, v in items]})
                else:
                    self._send_remote(task, self.step_id, items)

    def try_recv(self, key):
        with self._lock:
            if self._error is not None:
                raise self._error
            return self._items.pop(key, MISSING)

    def _take_arrived(self, parked: dict):
        """[(step index, value)] of every parked key that has arrived (under the lock): all
        at once, so the executor runs everything they unblock before it sends or waits."""
        return [(idx, self._items.pop(key)) for key, idx in parked.items() if key in self._items]

    def take_any_or_notify(self, parked: dict, on_ready, deadline=None):
        """[(step index, value)] of the parked keys that have arrived; if none, [] and
        ``on_ready()`` is called once when one arrives or the step is aborted
        (DeadlineExceededError once ``deadline`` has passed)."""
        with self._lock:
            if self._error is not None:
                raise self._error
            got = self._take_arrived(parked)
            if not got:
                if deadline is not None and time.monotonic() >= deadline:
                    raise _deadline_error(parked)
                self._waiter = (parked, on_ready)
            return got

    def recv(self, key, deadline=None):
        [(_, value)] = self.wait_any({key: 0}, deadline)
        return value

    def wait_any(self, parked: dict, deadline=None):
        """Blocks until parked keys arrive: returns [(step index, value)] of all arrived."""
        while True:
            with self._lock:
                if self._error is not None:
                    raise self._error
                got = self._take_arrived(parked)
                if got:
                    return got
                timeout = IDLE_SLICE_S
                if deadline is not None:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise _deadline_error(parked)
                    timeout = min(timeout, left)
                pump = self.pump
                if pump is not None and pump.owner != threading.get_ident():
                    pump = None  # its sockets belong to the thread that sent the step
                if pump is None:
                    if self._cond is None:
                        self._cond = threading.Condition(self._lock)
                    self._cond.wait(timeout)
                    arrived = any(k in self._items for k in parked) or self._error is not None
                else:
                    self._pumping = True  # from here on, a put wakes the pump
            if pump is not None:
                try:
                    pump.wait(timeout)
                finally:
                    with self._lock:
                        self._pumping = False
                        arrived = any(k in self._items for k in parked) or self._error is not None
            if not arrived and self.on_idle is not None:
                self.on_idle()

    def forget_waiter(self):
        """Drops a parked step's callback once the step has ended here: a step parked only
        on kernels leaves it registered (for an abort), and it refers back to the step."""
        with self._lock:
            self._waiter = None

    def abort(self, error):
        with self._lock:
            if self._error is None:
                self._error = error
            if self._cond is not None:
                self._cond.notify_all()
            wake, self._waiter = (self._waiter or (None, None))[1], None
            pumping = self._pumping
        if wake is not None:
            wake()
        if pumping:
            self.pump.wake()


def _deadline_error(parked):
    waiting = ", ".join(_describe_key(k) for k in parked) or "kernels that wait for other steps"
    return errors.DeadlineExceededError(None, None, f"Timed out waiting for tensors from other "
                                        f"tasks: {waiting}")


def _describe_key(key: str) -> str:
    src, _, rest = key.partition(";")
    _, _, tensor = rest.partition(";")
    return f"{tensor} from {src}"


class RendezvousManager:
    """Step id -> StepRendezvous, created on first use by either side. Tensors that arrive
    for a step that already finished are dropped (bounded memory of finished ids), and so
    are those of a step that never starts here (ORPHAN_S)."""

    def __init__(self, send_remote=None, local_task=""):
        self._steps: dict = {}
        self._lock = threading.Lock()
        self._finished = collections.OrderedDict()
        self._send_remote = send_remote
        self._local_task = local_task
        self._last_sweep = time.monotonic()

    def step(self, step_id, starting=False) -> StepRendezvous:
        """The step's rendezvous; ``starting``: a partition of the step starts with it."""
        r = self._steps.get(step_id)
        if r is None:
            with self._lock:
                r = self._steps.get(step_id)
                if r is None:
                    self._sweep_orphans()
                    r = self._steps[step_id] = StepRendezvous(step_id, self._send_remote, self._local_task)
        if starting:
            r.started = True
        return r

    def _sweep_orphans(self):
        now = time.monotonic()
        if now - self._last_sweep < _SWEEP_EVERY_S:
            return
        self._last_sweep = now
        for step_id, r in list(self._steps.items()):
            if not r.started and now - r.created > ORPHAN_S:
                del self._steps[step_id]

    def put(self, step_id, key, value):
        self.put_many(step_id, ((key, value),))

    def put_many(self, step_id, items):
        if step_id in self._finished:
            return
        self.step(step_id).put_many(items)

    def finish(self, step_id):
        with self._lock:
            r = self._steps.pop(step_id, None)
            if r is not None:
                r.forget_waiter()
            self._finished[step_id] = None
            while len(self._finished) > 4096:
                self._finished.popitem(last=False)

    def abort(self, step_id, error):
        if step_id in self._finished:
            return  # every partition of it here has ended already
        self.step(step_id).abort(error)

    def active_steps(self):
        return len(self._steps)
