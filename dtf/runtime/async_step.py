"""A master step driven by the server's I/O thread without blocking it.

The I/O thread sends the step's RunGraphs, starts this task's partition (on the I/O thread
when it is quick, else on a handler thread) and goes back to serving; each reply completes
a part, and the last one answers the client. A step costs no thread hand-off on this task.
What to do on each reply, error, ping and silence is decided by the step's
``step_machine.StepMachine``; this module only carries its actions out with the loop's
``request``/``push``/``call_later``/``run_on_pool``.

Liveness: one timer per loop (``_Watchdog``) offers every running step a ping round each
PING_EVERY_S / 2; the machine pings the parts still running every PING_EVERY_S, and a port
probe (on a pool thread: it may block) judges a ping left unanswered for PING_TIMEOUT_S.
"""
from __future__ import annotations

import time

from dtf.runtime import liveness
from dtf.runtime.step_machine import FOLD, Abort, Finish, Invalidate, Ping, Send, StepMachine
from dtf.wire import transport


class AsyncStep:
    """One step of a cached plan: ``start()`` returns once everything is sent."""

    def __init__(self, session, plan, msgs, fetches, feeds, respond, loop):
        self.session = session
        master = self.master = session.master
        self.plan = plan
        self.fetches = fetches
        self.feeds = feeds
        self.respond = respond
        self.loop = loop
        local = master.task_name
        address = master.peers.address
        addresses = []  # a loop, not a comprehension: one frame fewer per step
        for p in plan.parts:
            addresses.append(None if p.task == local else address(p.task))
        self.machine = StepMachine(msgs[0]["step_id"], plan.parts, msgs, addresses, local,
                                   time.monotonic(), FOLD)
        self.rids: dict = {}  # part index -> request id of a remote part

    def start(self):
        machine, loop = self.machine, self.loop
        for action in machine.start():
            if machine.done:
                break
            if type(action) is Send:  # carried out here: one frame fewer per remote part
                i = action.part
                try:
                    self.rids[i] = loop.request(machine.addresses[i], action.msg,
                                                lambda r, i=i: self._on_reply(i, r))
                except Exception as e:  # noqa: BLE001 - e.g. a message over the size limit
                    self._act(machine.send_failed(i, e))
            else:
                self._run_here(action)
        if not machine.done and self.rids:
            _watchdog(loop).add(self)

    def _act(self, actions):
        for action in actions:
            self._ACTIONS[type(action)](self, action)

    # -- actions -----------------------------------------------------------------------
    def _run_here(self, action):
        i, msg = action.part, action.msg
        worker = self.master.peers.local_worker()

        def on_result(result):
            if isinstance(result, BaseException):
                self._act(self.machine.local_failed(i, result))
            else:
                actions = self.machine.replied(i, result)
                if actions:
                    self._finish(actions[0])  # replied() gives only Finish(None)

        try:
            if not worker.start_graph(msg, on_result, self.loop):
                self.loop.run_on_pool(lambda: worker.run_graph(msg), on_result)
        except Exception as e:  # noqa: BLE001 - e.g. this task restarted: abort the others too
            self._act(self.machine.local_failed(i, e))

    def _abort(self, action):
        try:
            if action.task == self.master.task_name:
                self.master.peers.local_worker().abort_step(action.msg)
            else:
                self.loop.push(self.master.peers.address(action.task), action.msg)
        except Exception:  # noqa: BLE001 - best effort
            pass

    def _invalidate(self, action):
        self.session.task_restarted()

    def _finish(self, action):
        if action.error is None:
            outputs = {f: self.feeds[f] for f in self.plan.fed_fetches}
            for r in self.machine.replies:
                outputs.update(r["outputs"])
            result = {"outputs": [outputs[f] for f in self.fetches]}
        else:
            result = action.error
            for rid in self.rids.values():
                self.loop.forget(rid)
        # Drop the step's tensors now it has ended (a fetched slice would keep its whole
        # source alive while anything refers to the step).
        self.machine.replies = self.machine.msgs = self.feeds = None
        if self.rids:
            _watchdog(self.loop).discard(self)
        self.respond(result)

    def _ping(self, action):
        i, machine, loop = action.part, self.machine, self.loop
        address = machine.addresses[i]
        answered = []

        def on_pong(reply):
            answered.append(True)
            self._act(machine.pong(i, reply.get("incarnation")))

        def on_silence():
            if answered or machine.done:
                return
            loop.forget(rid)
            # The port probe may block (a host that is gone): off the I/O thread.
            loop.run_on_pool(lambda: liveness.port_accepts(address),
                             lambda accepts: self._act(machine.silent(i, accepts is True)))

        rid = loop.request(address, {"type": "Ping"}, on_pong, kind="ping")
        loop.call_later(transport.PING_TIMEOUT_S, on_silence)

    # Send and RunHere come only from start(), which carries them out itself.
    _ACTIONS = {Abort: _abort, Invalidate: _invalidate, Finish: _finish, Ping: _ping}

    # -- events ------------------------------------------------------------------------
    def _on_reply(self, i, reply):
        try:
            transport.raise_for_error(reply)
            if "tensors" in reply:  # the tensors its partition sent this task last (fold)
                self.master.peers.local_worker().tensor_push(reply)
        except Exception as e:  # noqa: BLE001 - an error reply, or tensors that do not fit
            self._act(self.machine.reply_failed(i, e))
            return
        actions = self.machine.replied(i, reply)
        if actions:
            self._finish(actions[0])  # replied() gives only Finish(None)

    def check_peers(self, now):
        """Pings the parts still running remotely when they are due (the watchdog asks)."""
        self._act(self.machine.ping_due(now))


class _Watchdog:
    """Liveness checks of a loop's running steps: one timer for all of them (a timer per
    step kept every step, and what it holds, alive for PING_EVERY_S after it ended)."""

    def __init__(self, loop):
        self.loop = loop
        self.steps: dict = {}  # the steps running, in the order they started
        self.armed = False

    def add(self, step):
        self.steps[step] = None
        if not self.armed:
            self.armed = True
            self.loop.call_later(transport.PING_EVERY_S / 2, self._tick)

    def discard(self, step):
        self.steps.pop(step, None)

    def _tick(self):
        now = time.monotonic()
        for step in list(self.steps):
            if step in self.steps:
                step.check_peers(now)
        self.armed = bool(self.steps)
        if self.armed:
            self.loop.call_later(transport.PING_EVERY_S / 2, self._tick)


def _watchdog(loop) -> _Watchdog:
    if loop.step_watchdog is None:
        loop.step_watchdog = _Watchdog(loop)
    return loop.step_watchdog
