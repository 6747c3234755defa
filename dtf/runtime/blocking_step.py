"""A master step driven by a handler thread that may block.

The thread sends the remote parts' RunGraphs, runs this task's partition itself and reads
the replies afterwards (no thread hops on the common path); partitions of other tasks in
this process run on the peers' pool. While this task's partition waits for tensors, its
rendezvous calls back here (``rendezvous.WaitHooks``): replies that arrived are taken, the
remote parts are pinged when due, and an error or a dead peer anywhere aborts the step
everywhere instead of leaving receives blocked. What each event means is decided by the
step's ``step_machine.StepMachine``; this module carries its actions out.
"""
from __future__ import annotations

import logging
import math
import threading
import time

from dtf.framework import errors
from dtf.runtime import liveness
from dtf.runtime.step_machine import EARLY, Abort, Finish, Invalidate, Ping, Send, StepMachine
from dtf.wire import transport

log = logging.getLogger("dtf")

LOG_WAIT_EVERY_S = 10.0


class BlockingStep:
    """One step run by the calling thread: ``run()`` returns the parts' replies in the
    plan's order, or raises the step's first error. It is itself the WaitHooks it lends
    this task's partition (``on_idle``, ``pump``)."""

    def __init__(self, session, parts, msgs, step_id, timeout_ms):
        peers = self.peers = session.master.peers
        self.session = session
        self.client = peers.client
        # One loop, no comprehensions: every step of a between-graph worker comes here.
        services, addresses = [], []
        for p in parts:
            svc = peers.in_process(p.task)
            services.append(svc)
            addresses.append(peers.address(p.task) if svc is None else None)
        self.services = services
        self.machine = StepMachine(step_id, parts, msgs, addresses, session.master.task_name,
                                   time.monotonic(), EARLY)
        self.timeout_s = None if not timeout_ms else timeout_ms / 1000.0 + 2.0
        self.rids: dict = {}  # part -> request id of a remote part
        self.futures: list = []  # (part, future) of partitions of other tasks in this process
        self.pump = None  # rendezvous.WaitHooks.pump: a _ReplyPump when the parts send early
        self._last_log = 0.0

    def run(self):
        machine = self.machine
        inline = None  # this task's partition, run on this thread
        for action in machine.start():
            if machine.done:
                break
            i = action[0]
            if type(action) is Send:
                try:
                    self.rids[i] = self.client.send(machine.addresses[i], action.msg)
                except Exception as e:  # noqa: BLE001 - zmq errors on a closed context, a message too large
                    self._act(machine.send_failed(i, e))
            elif inline is None and machine.parts[i].task == machine.local_task:
                inline = action
            else:
                try:
                    self.futures.append((i, self.peers.submit(self.services[i].dispatch, action.msg)))
                except Exception as e:  # noqa: BLE001 - the pool has shut down: this task stops
                    self._act(machine.local_failed(i, e))
        # replied() gives at most Finish(None), which needs nothing here: the replies are
        # returned below.
        if inline is not None and not machine.done:
            i = inline.part
            if self.rids and machine.mark == EARLY:
                self.pump = _ReplyPump(self)
            try:
                # On this thread, whatever its speed: whether start_graph may run the plan
                # on an I/O thread is judged by the runs that go that way.
                reply = self.services[i].worker.run_graph(inline.msg, self if self.rids else None,
                                                          judge=False)
            except Exception as e:  # noqa: BLE001 - the step's error: the others are aborted
                self._act(machine.local_failed(i, e))
            else:
                machine.replied(i, reply)
            finally:
                self.pump = None  # it refers back to this step: no cycle left for the collector
        for i, rid in self.rids.items():
            if i in machine.pending and not machine.done:
                self._receive(i, rid)
        for i, future in self.futures:
            try:
                reply = future.result()
            except Exception as e:  # noqa: BLE001 - as above
                self._act(machine.local_failed(i, e))
            else:
                machine.replied(i, reply)
        if machine.error is not None:
            raise machine.error
        return machine.replies

    def _act(self, actions):
        for action in actions:
            self._ACTIONS[type(action)](self, action)

    # -- actions -----------------------------------------------------------------------
    def _abort(self, action):
        try:
            self.peers.push(action.task, action.msg)
        except Exception:  # noqa: BLE001 - best effort
            pass

    def _invalidate(self, action):
        self.session.task_restarted()

    def _finish(self, action):
        if action.error is not None:  # aborted: the replies still awaited are not read
            for i, rid in self.rids.items():
                if i in self.machine.pending:
                    self.client.forget(rid)

    def _ping(self, action):
        i, machine = action.part, self.machine
        if machine.done:
            return
        address = machine.addresses[i]
        try:
            reply = self.client.ping(address, transport.PING_TIMEOUT_S)
        except transport.Unreachable:
            self._act(machine.silent(i, liveness.port_accepts(address)))
        else:
            self._act(machine.pong(i, reply.get("incarnation")))

    # Send and RunHere come only from start(), which run() carries out itself.
    _ACTIONS = {Abort: _abort, Invalidate: _invalidate, Finish: _finish, Ping: _ping}

    # -- events ------------------------------------------------------------------------
    def _got(self, i, reply):
        """A remote part's reply, read while this task's partition waited or after it."""
        try:
            transport.raise_for_error(reply)
            if "tensors" in reply:  # its partition's last sends to this task (folded)
                self.peers.local_worker().tensor_push(reply)
        except Exception as e:  # noqa: BLE001 - an error reply, or tensors that do not fit
            self._act(self.machine.reply_failed(i, e))
        else:
            self.machine.replied(i, reply)

    def _receive(self, i, rid):
        machine = self.machine
        task, address = machine.parts[i].task, machine.addresses[i]

        def on_wait(elapsed):
            if elapsed - self._last_log >= LOG_WAIT_EVERY_S:
                self._last_log = elapsed
                log.info("waiting for %s at %s (%.0f s)", task, address, elapsed)
            self._act(machine.ping_due(time.monotonic()))
            if machine.error is not None:
                raise machine.error  # abandons the wait (the rid is forgotten)

        try:
            reply = self.client.receive(address, rid, self.timeout_s, on_wait=on_wait,
                                        on_interim=self.peers.local_worker().tensor_push)
        except transport.Unreachable:
            self._act(machine.timed_out(i, self.timeout_s))
        except errors.OpError as e:
            self._act(machine.reply_failed(i, e))
        else:
            self._got(i, reply)

    def on_idle(self):
        """rendezvous.WaitHooks.on_idle: called by this task's partition while it waits for
        tensors (every IDLE_SLICE_S without one)."""
        machine = self.machine
        for i, rid in self.rids.items():
            if i in machine.pending and not machine.done:
                reply = self.client.try_receive(machine.addresses[i], rid,
                                                on_interim=self.peers.local_worker().tensor_push)
                if reply is not None:
                    self._got(i, reply)
        self._act(machine.ping_due(time.monotonic()))


class _ReplyPump:
    """How this task's partition waits for tensors (StepRendezvous.wait_any) on the thread
    that sent the step's RunGraphs, when the remote parts were asked with ``early``: it
    polls that thread's sockets to the remote parts, and a wake-up another thread
    signals when it puts a tensor in the rendezvous. The remote parts send this task's tensors ahead
    of their reply on those sockets, so they reach the waiting thread without passing
    through the task's I/O thread (a thread hand-off each way). Replies that arrive go to
    the step's machine; an error among them aborts the step, which ends the wait."""

    def __init__(self, step):
        self._step = step
        self._wakeup = step.peers.wakeup()
        self._deliver = step.peers.local_worker().tensor_push
        self.owner = threading.get_ident()  # the sockets' thread: only it may wait here

    def wait(self, timeout_s):
        step = self._step
        machine, client = step.machine, step.client
        waiting = [(i, machine.addresses[i], rid) for i, rid in step.rids.items() if i in machine.pending]
        wake_fd = self._wakeup.fileno()
        polled = [client.reply_socket(address) for _, address, _ in waiting] + [wake_fd]
        if wake_fd in transport.poll_readable(polled, max(0, math.ceil(timeout_s * 1000))):
            self._wakeup.clear()
        for i, address, rid in waiting:
            if machine.done:
                break
            reply = client.try_receive(address, rid, on_interim=self._deliver)
            if reply is not None:
                step._got(i, reply)

    def wake(self):
        if threading.get_ident() != self.owner:  # not a tensor it delivered itself
            self._wakeup.wake()
