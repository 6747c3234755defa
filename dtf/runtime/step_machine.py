"""The master's side of one step, without I/O: events go in, actions come out.

A step is one RunGraph per partition of its plan (remote parts first, this task's last).
It succeeds when every part has answered, and fails at the first error, dead peer or
restarted peer: then the partitions of every other task are aborted, so none of them waits
for a tensor that will not come, and the client gets that first error. ``StepMachine``
decides all of that; it never sends or waits (only liveness.SilentPeer, which it asks
about a silent peer, reads the clock for how long it has been hung). Two drivers feed it events
and carry out its actions, each in the way its thread allows:

- ``async_step.AsyncStep`` on a server's I/O thread (RunStep of a plan already built, every
  other part in another process): it sends, and its callbacks feed the replies back;
- ``blocking_step.BlockingStep`` on a handler thread (the first run of a signature, traced
  or timed steps, parts in other tasks of this process): it runs this task's partition on
  the calling thread and reads the replies there.

========================  ==================================================================
event                     actions (a sequence; empty when there is nothing to do)
========================  ==================================================================
start()                   ``Send(part, msg)`` per remote part, then ``RunHere(part, msg)`` per
                          part in this process; remote RunGraphs carry the delivery mark of
                          the driver's ``mode`` (see "Delivery modes" in rendezvous.py)
replied(part, reply)      none while parts run; ``Finish(None)`` after the last one (nothing
                          else: a driver with nothing to do then may skip it)
failed(task, error)       ``Abort(task, msg)`` per other task of the step, ``Invalidate()``
                          when a task restarted (AbortedError), ``Finish(error)``
send_failed(part, exc)    as failed(), with the error the client should read
reply_failed(part, exc)   as failed(): an error reply, or one this task cannot take
local_failed(part, exc)   as failed(): a partition run in this process raised
timed_out(part, timeout)  as failed(), with DeadlineExceededError
ping_due(now)             ``Ping(part)`` per remote part still running, every PING_EVERY_S
pong(part, incarnation)   none, or as failed() when the part's task has restarted
silent(part, accepts)     none while the task may be hung (its port accepts, under the
                          limit of dtf.runtime.liveness), else as failed() (dead)
========================  ==================================================================

Once ``Finish`` has been given (``done``), every event returns no actions: a late reply,
pong or error of an ended step changes nothing.
"""
from __future__ import annotations

from typing import NamedTuple

from dtf.framework import errors
from dtf.runtime import liveness
from dtf.wire import transport

# How a driver asks the remote parts to deliver this task's tensors (rendezvous.py's
# "Delivery modes"): FOLD in the RunGraph reply, EARLY as interim replies ahead of it.
FOLD = "fold"
EARLY = "early"

ABORT_MESSAGE = "Step cancelled because another task failed: "


class Send(NamedTuple):
    """Send RunGraph ``msg`` to the remote ``part``; its reply feeds ``replied``."""
    part: int
    msg: dict


class RunHere(NamedTuple):
    """Run ``part`` (a partition of a task in this process) with RunGraph ``msg``."""
    part: int
    msg: dict


class Abort(NamedTuple):
    """Push AbortStep ``msg`` to ``task`` (best effort: it may be the dead one)."""
    task: str
    msg: dict


class Ping(NamedTuple):
    """Ping the task of ``part``; feed the answer to ``pong``, silence to ``silent``."""
    part: int


class Invalidate(NamedTuple):
    """A task restarted: forget the session's plans and the GPU counts of the tasks."""


class Finish(NamedTuple):
    """The step has ended: answer the client with the replies (``error`` None) or with
    ``error``, and forget the requests still outstanding."""
    error: errors.OpError | None


_FINISHED = (Finish(None),)
_new = tuple.__new__
_INVALIDATE = Invalidate()


class StepMachine:
    """One step of a plan. ``parts``: its partitions (``task``, ``incarnation``); ``msgs``:
    their RunGraphs; ``addresses``: each part's address, None for a part in this process;
    ``now``: the monotonic time the step starts (the first ping is due PING_EVERY_S later)."""

    __slots__ = ("step_id", "parts", "msgs", "addresses", "local_task", "mode", "mark", "replies",
                 "pending", "done", "error", "_next_ping", "_silences")

    def __init__(self, step_id, parts, msgs, addresses, local_task, now, mode=FOLD):
        self.step_id = step_id
        self.parts = parts
        self.msgs = msgs
        self.addresses = addresses
        self.local_task = local_task
        self.mode = mode
        self.mark = None  # the delivery mark start() gave the remote RunGraphs
        self.replies = [None] * len(parts)
        self.pending = set(range(len(parts)))
        self.done = False
        self.error = None
        self._next_ping = now + transport.PING_EVERY_S
        self._silences = None  # part -> liveness.SilentPeer, once it was silent

    # -- starting ----------------------------------------------------------------------
    def start(self):
        """The RunGraphs to send, then the partitions to run in this process."""
        local, parts, msgs, addresses = self.local_task, self.parts, self.msgs, self.addresses
        # Plain loops and tuple.__new__ (no comprehension or NamedTuple frames): this runs
        # for every step, and the cross-task step takes a few hundred microseconds.
        remote, here = [], []
        for i, address in enumerate(addresses):
            (here if address is None else remote).append(i)
        mark = None
        if self.mode == FOLD:
            # The last tensors a remote partition sends this task ride in its reply.
            mark = FOLD
        elif remote:
            # Tensors for this task go ahead of the reply, to the thread that waits in this
            # task's partition: only when that partition is the step's one in this process
            # and each remote task runs one part (one reply to read each).
            tasks = set()
            for i in remote:
                tasks.add(parts[i].task)
            if len(tasks) == len(remote) and len(here) == 1 and parts[here[0]].task == local:
                mark = EARLY
        self.mark = mark
        actions = []
        for i in remote:
            msg = msgs[i]
            if mark is not None:
                msg[mark] = local
            actions.append(_new(Send, (i, msg)))
        for i in here:
            actions.append(_new(RunHere, (i, msgs[i])))
        return actions

    # -- replies and failures ----------------------------------------------------------
    def replied(self, part, reply):
        if self.done:
            return ()
        self.replies[part] = reply
        pending = self.pending
        pending.discard(part)
        if pending:
            return ()
        self.done = True
        return _FINISHED

    def failed(self, task, error):
        """``task`` failed the step with ``error`` (an OpError)."""
        if self.done:
            return ()
        self.done = True
        self.error = error
        first = (error.message.splitlines() or [""])[0]
        actions = []
        aborted = {task}
        for p in self.parts:
            if p.task not in aborted:
                aborted.add(p.task)
                actions.append(Abort(p.task, {"type": "AbortStep", "step_id": self.step_id,
                                              "code": errors.CANCELLED,
                                              "message": ABORT_MESSAGE + first}))
        if isinstance(error, errors.AbortedError):
            actions.append(_INVALIDATE)
        actions.append(Finish(error))
        return actions

    def send_failed(self, part, exc):
        """Sending ``part``'s RunGraph raised ``exc`` (e.g. a message over the size limit)."""
        task = self.parts[part].task
        return self.failed(task, exc if isinstance(exc, errors.OpError) else errors.UnavailableError(
            None, None, f"Cannot reach {task} at {self.addresses[part]}: {exc}"))

    def reply_failed(self, part, exc):
        """``part``'s reply was an error, or carried tensors this task could not take."""
        task = self.parts[part].task
        return self.failed(task, exc if isinstance(exc, errors.OpError) else errors.InvalidArgumentError(
            None, None, f"malformed RunGraph reply from {task}: {type(exc).__name__}: {exc}"))

    def local_failed(self, part, exc):
        """A partition run in this process raised ``exc``."""
        return self.failed(self.parts[part].task, exc if isinstance(exc, errors.OpError) else
                           errors.InternalError(None, None, f"{type(exc).__name__}: {exc}"))

    def timed_out(self, part, timeout_s):
        task = self.parts[part].task
        return self.failed(task, errors.DeadlineExceededError(
            None, None, f"Timed out after {timeout_s:.1f} s waiting for {task} at {self.addresses[part]}"))

    # -- liveness ----------------------------------------------------------------------
    def ping_due(self, now):
        if self.done or now < self._next_ping:
            return ()
        self._next_ping = now + transport.PING_EVERY_S
        return [Ping(i) for i in sorted(self.pending) if self.addresses[i] is not None]

    def pong(self, part, incarnation):
        if self.done:
            return ()
        if self._silences is not None and part in self._silences:
            self._silences[part].answered()
        p = self.parts[part]
        if incarnation != p.incarnation:
            return self.failed(p.task, errors.AbortedError(
                None, None, f"Task {p.task} at {self.addresses[part]} restarted while the step was running"))
        return ()

    def silent(self, part, accepts):
        """The task of ``part`` left a ping unanswered for PING_TIMEOUT_S; ``accepts``: its
        port still accepts connections (liveness.port_accepts)."""
        if self.done:
            return ()
        if self._silences is None:
            self._silences = {}
        silence = self._silences.setdefault(part, liveness.SilentPeer())
        task, address = self.parts[part].task, self.addresses[part]
        try:
            silence.judge(address, errors.UnavailableError(
                None, None, f"Task {task} at {address} is not answering (it may have died or never "
                "started)"), accepts=bool(accepts))
        except errors.OpError as e:
            return self.failed(task, e)
        return ()
