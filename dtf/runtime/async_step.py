"""A master step run by the server's I/O thread without blocking it.

The threaded path (``MasterSession.run_step`` on a handler thread) sends the step's
RunGraphs, runs this task's partition and waits for the replies. Here the I/O thread
sends the RunGraphs, starts this task's partition (on the I/O thread when it is quick,
else on a handler thread) and goes back to serving; each reply completes a part, and the
last one answers the client. A step costs no thread hand-off on this task.

Liveness is watched as on the threaded path: every PING_EVERY_S the tasks that have not
answered are pinged, and one that stays silent for PING_TIMEOUT_S while its port refuses
connections (dead, not hung: dtf.runtime.liveness), or answers with another incarnation,
fails the step by name.
"""
from __future__ import annotations

import time

from dtf.framework import errors
from dtf.runtime import liveness
from dtf.wire import transport


class AsyncStep:
    """One step of a cached plan: ``start()`` returns once everything is sent."""

    def __init__(self, session, plan, msgs, fetches, feeds, respond, loop):
        self.session = session
        self.master = session.master
        self.plan = plan
        self.msgs = msgs  # one RunGraph per part
        self.step_id = msgs[0]["step_id"]
        self.fetches = fetches
        self.feeds = feeds
        self.respond = respond
        self.loop = loop
        self.replies = [None] * len(plan.parts)
        self.pending = set(range(len(plan.parts)))
        self.rids: dict = {}  # part index -> request id of a remote part
        self.done = False
        self.silences = None  # task -> liveness.SilentPeer, once one was silent

    def start(self):
        local_task = self.master.task_name
        for i, (part, msg) in enumerate(zip(self.plan.parts, self.msgs)):
            if part.task == local_task:
                continue
            # Tensors its partition sends this task last come back in the reply (one message
            # fewer); this task's partition gets them when the reply arrives.
            msg["fold"] = local_task
            try:
                address = self.master.peers.address(part.task)
                self.rids[i] = self.loop.request(address, msg, lambda r, i=i: self._on_reply(i, r))
            except Exception as e:  # noqa: BLE001 - e.g. a message over the size limit
                self._fail(part.task, e if isinstance(e, errors.OpError) else errors.UnavailableError(
                    None, None, f"Cannot reach {part.task}: {e}"))
                return
        for i, (part, msg) in enumerate(zip(self.plan.parts, self.msgs)):
            if part.task == local_task and not self.done:
                try:
                    self._start_local(i, msg)
                except Exception as e:  # noqa: BLE001 - e.g. this task restarted: abort the others too
                    self._fail(local_task, _op_error(e))
        if not self.done and self.rids:
            _watchdog(self.loop).add(self)

    def _start_local(self, i, msg):
        worker = self.master.peers.local_worker()

        def on_result(result):
            if isinstance(result, BaseException):
                self._fail(self.master.task_name, _op_error(result))
            else:
                self._complete(i, result)

        if not worker.start_graph(msg, on_result, self.loop):
            self.loop.run_on_pool(lambda: worker.run_graph(msg), on_result)

    def _on_reply(self, i, reply):
        task = self.plan.parts[i].task
        try:
            transport.raise_for_error(reply)
            if "tensors" in reply:
                self.master.peers.local_worker().tensor_push(reply)
        except Exception as e:  # noqa: BLE001 - an error reply, or tensors that do not fit
            self._fail(task, e if isinstance(e, errors.OpError) else errors.InvalidArgumentError(
                None, None, f"malformed RunGraph reply from {task}: {type(e).__name__}: {e}"))
            return
        self._complete(i, reply)

    def _complete(self, i, reply):
        if self.done:
            return
        self.replies[i] = reply
        self.pending.discard(i)
        if self.pending:
            return
        self.done = True
        outputs = {f: self.feeds[f] for f in self.plan.fed_fetches}
        for r in self.replies:
            outputs.update(r["outputs"])
        self._release()
        self.respond({"outputs": [outputs[f] for f in self.fetches]})

    def _release(self):
        """Drops the step's tensors once it has ended (a fetched slice would keep its whole
        source alive while anything refers to the step)."""
        self.replies = self.feeds = self.msgs = None
        if self.rids:
            _watchdog(self.loop).discard(self)

    def _fail(self, task, error):
        if self.done:
            return
        self.done = True
        for rid in self.rids.values():
            self.loop.forget(rid)
        abort = {"type": "AbortStep", "step_id": self.step_id, "code": errors.CANCELLED,
                 "message": "Step cancelled because another task failed: "
                            f"{error.message.splitlines()[0]}"}
        for part in self.plan.parts:
            if part.task == task:
                continue
            try:
                if part.task == self.master.task_name:
                    self.master.peers.local_worker().abort_step(dict(abort))
                else:
                    self.loop.push(self.master.peers.address(part.task), dict(abort))
            except Exception:  # noqa: BLE001 - best effort
                pass
        if isinstance(error, errors.AbortedError):
            self.session.invalidate()  # a task restarted: register afresh next time
            self.master.peers.forget_gpu_counts()
        self._release()
        self.respond(error)

    def _silence(self, part):
        if self.silences is None:
            self.silences = {}
        return self.silences.setdefault(part.task, liveness.SilentPeer())

    def check_peers(self):
        """Pings the parts still running remotely (the watchdog calls it every PING_EVERY_S)."""
        for i in list(self.pending):
            if i in self.rids and not self.done:
                self._ping(self.plan.parts[i])

    def _ping(self, part):
        address = self.master.peers.address(part.task)
        answered = []

        def on_pong(reply):
            answered.append(True)
            self._silence(part).answered()
            if reply.get("incarnation") != part.incarnation:
                self._fail(part.task, errors.AbortedError(
                    None, None, f"Task {part.task} at {address} restarted while the step was running"))

        def on_silence():
            if answered or self.done:
                return
            self.loop.forget(rid)
            # The port probe may block (a host that is gone): off the I/O thread.
            self.loop.run_on_pool(lambda: liveness.port_accepts(address), judge)

        def judge(accepts):
            if self.done:
                return
            try:
                self._silence(part).judge(address, errors.UnavailableError(
                    None, None, f"Task {part.task} at {address} is not answering (it may have "
                    "died or never started)"), accepts=accepts is True)
            except errors.OpError as e:
                self._fail(part.task, e)

        rid = self.loop.request(address, {"type": "Ping"}, on_pong, kind="ping")
        self.loop.call_later(transport.PING_TIMEOUT_S, on_silence)


class _Watchdog:
    """Liveness checks of a loop's running steps: one timer for all of them (a timer per
    step kept every step, and what it holds, alive for PING_EVERY_S after it ended). A
    step is first checked once it has run PING_EVERY_S, then every PING_EVERY_S."""

    def __init__(self, loop):
        self.loop = loop
        self.steps: dict = {}  # step -> monotonic time of its next check
        self.armed = False

    def add(self, step):
        self.steps[step] = time.monotonic() + transport.PING_EVERY_S
        if not self.armed:
            self.armed = True
            self.loop.call_later(transport.PING_EVERY_S / 2, self._tick)

    def discard(self, step):
        self.steps.pop(step, None)

    def _tick(self):
        now = time.monotonic()
        for step, due in list(self.steps.items()):
            if due <= now and step in self.steps:
                self.steps[step] = now + transport.PING_EVERY_S
                step.check_peers()
        self.armed = bool(self.steps)
        if self.armed:
            self.loop.call_later(transport.PING_EVERY_S / 2, self._tick)


def _watchdog(loop) -> _Watchdog:
    if loop.step_watchdog is None:
        loop.step_watchdog = _Watchdog(loop)
    return loop.step_watchdog


def _op_error(e) -> errors.OpError:
    """A failure of this task's own partition as the error the client gets."""
    return e if isinstance(e, errors.OpError) else errors.InternalError(None, None, f"{type(e).__name__}: {e}")
