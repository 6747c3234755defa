"""The master's step machine without a network: events in, actions out (step_machine), and
the I/O-thread driver (async_step) run against an in-memory loop that records what it
would send."""
from __future__ import annotations

import socket
from dataclasses import dataclass

import pytest

from dtf.framework import errors
from dtf.runtime import step_machine as sm
from dtf.runtime.async_step import AsyncStep
from dtf.wire import transport

LOCAL = "/job:worker/replica:0/task:0"
PS0 = "/job:ps/replica:0/task:0"
PS1 = "/job:ps/replica:0/task:1"
ADDR = {PS0: "127.0.0.1:5000", PS1: "127.0.0.1:5001", LOCAL: None}


@dataclass
class Part:
    task: str
    incarnation: int = 7


def machine(tasks=(PS0, LOCAL), mode=sm.FOLD, now=0.0, addresses=None):
    parts = [Part(t) for t in tasks]
    msgs = [{"type": "RunGraph", "step_id": 11, "handle": f"h{i}"} for i in range(len(parts))]
    addresses = addresses or [ADDR[t] for t in tasks]
    return sm.StepMachine(11, parts, msgs, addresses, LOCAL, now, mode)


def kinds(actions):
    return [type(a).__name__ for a in actions]


# -- start and delivery marks --------------------------------------------------------------
def test_start_sends_remote_parts_then_runs_this_tasks_and_marks_fold():
    m = machine((PS0, PS1, LOCAL))
    acts = m.start()
    assert acts == [sm.Send(0, m.msgs[0]), sm.Send(1, m.msgs[1]), sm.RunHere(2, m.msgs[2])]
    assert m.msgs[0]["fold"] == LOCAL and m.msgs[1]["fold"] == LOCAL and "fold" not in m.msgs[2]
    assert m.mark == sm.FOLD


def test_early_only_when_this_tasks_partition_is_the_one_here_and_one_part_per_remote_task():
    m = machine((PS0, PS1, LOCAL), mode=sm.EARLY)
    m.start()
    assert m.mark == sm.EARLY and m.msgs[0]["early"] == LOCAL and "fold" not in m.msgs[0]
    two_parts_on_ps0 = machine((PS0, PS0, LOCAL), mode=sm.EARLY)
    two_parts_on_ps0.start()
    assert two_parts_on_ps0.mark is None and "early" not in two_parts_on_ps0.msgs[0]
    # another task of this process runs a part: the waiting thread cannot poll for it
    other_here = machine((PS0, PS1, LOCAL), mode=sm.EARLY, addresses=[ADDR[PS0], None, None])
    assert kinds(other_here.start()) == ["Send", "RunHere", "RunHere"]
    assert other_here.mark is None


# -- replies and failures -----------------------------------------------------------------
def test_the_last_reply_finishes_the_step_once():
    m = machine()
    m.start()
    assert m.replied(1, {"outputs": {"b": 2}}) == ()
    assert m.replied(0, {"outputs": {"a": 1}}) == (sm.Finish(None),)
    assert m.done and m.error is None and m.replies == [{"outputs": {"a": 1}}, {"outputs": {"b": 2}}]
    assert m.replied(0, {"outputs": {}}) == () and m.failed(PS0, errors.CancelledError(None, None, "x")) == ()


def test_a_failure_aborts_every_other_task_once_and_names_the_first_error():
    m = machine((PS0, PS1, PS1, LOCAL))
    m.start()
    err = errors.InvalidArgumentError(None, None, "bad shape\nsecond line")
    acts = m.failed(PS1, err)
    assert kinds(acts) == ["Abort", "Abort", "Finish"]
    assert [a.task for a in acts[:2]] == [PS0, LOCAL]
    for a in acts[:2]:
        assert a.msg == {"type": "AbortStep", "step_id": 11, "code": errors.CANCELLED,
                         "message": "Step cancelled because another task failed: bad shape"}
    assert acts[0].msg is not acts[1].msg  # each push owns its header
    assert acts[-1] == sm.Finish(err) and m.error is err
    assert m.replied(0, {"outputs": {}}) == ()  # a late reply changes nothing


def test_a_restarted_task_invalidates_the_sessions_plans():
    m = machine()
    m.start()
    acts = m.failed(PS0, errors.AbortedError(None, None, "Graph handle 'h0' is not found"))
    assert kinds(acts) == ["Abort", "Invalidate", "Finish"]


def test_send_and_reply_failures_become_the_errors_the_client_reads():
    m = machine()
    m.start()
    acts = m.send_failed(0, OSError("socket closed"))
    assert isinstance(acts[-1].error, errors.UnavailableError)
    assert acts[-1].error.message == f"Cannot reach {PS0} at {ADDR[PS0]}: socket closed"
    m = machine()
    too_big = errors.ResourceExhaustedError(None, None, "message of 9 bytes exceeds the limit")
    assert m.send_failed(0, too_big)[-1].error is too_big
    m = machine()
    acts = m.reply_failed(0, KeyError("keys"))
    assert isinstance(acts[-1].error, errors.InvalidArgumentError)
    assert acts[-1].error.message.startswith(f"malformed RunGraph reply from {PS0}: KeyError")
    m = machine()
    acts = m.local_failed(1, ZeroDivisionError("boom"))
    assert kinds(acts) == ["Abort", "Finish"] and acts[0].task == PS0
    assert isinstance(acts[-1].error, errors.InternalError) and "ZeroDivisionError: boom" in acts[-1].error.message
    m = machine()
    acts = m.timed_out(0, 2.5)
    assert isinstance(acts[-1].error, errors.DeadlineExceededError)
    assert acts[-1].error.message == f"Timed out after 2.5 s waiting for {PS0} at {ADDR[PS0]}"


# -- liveness ----------------------------------------------------------------------------
def test_pings_are_due_every_ping_interval_for_remote_parts_still_running():
    every = transport.PING_EVERY_S
    m = machine((PS0, PS1, LOCAL), now=100.0)
    m.start()
    assert m.ping_due(100.0 + every / 2) == ()
    assert m.ping_due(100.0 + every) == [sm.Ping(0), sm.Ping(1)]
    assert m.ping_due(100.0 + every * 1.5) == ()
    m.replied(1, {"outputs": {}})
    assert m.ping_due(100.0 + every * 2) == [sm.Ping(0)]


def test_a_pong_from_another_incarnation_fails_the_step_as_aborted():
    m = machine()
    m.start()
    assert m.pong(0, 7) == ()
    acts = m.pong(0, 8)
    assert kinds(acts) == ["Abort", "Invalidate", "Finish"]
    assert acts[-1].error.message == f"Task {PS0} at {ADDR[PS0]} restarted while the step was running"


def test_silence_fails_the_step_only_when_the_port_refuses(monkeypatch):
    monkeypatch.setenv("DTF_HUNG_PEER_TIMEOUT_S", "300")
    m = machine()
    m.start()
    assert m.silent(0, accepts=True) == ()  # hung, not dead: the step waits on
    assert not m.done
    acts = m.silent(0, accepts=False)
    assert kinds(acts) == ["Abort", "Finish"] and isinstance(acts[-1].error, errors.UnavailableError)
    assert acts[-1].error.message == (f"Task {PS0} at {ADDR[PS0]} is not answering (it may have "
                                      "died or never started)")


def test_a_task_hung_past_the_limit_fails_the_step(monkeypatch):
    monkeypatch.setenv("DTF_HUNG_PEER_TIMEOUT_S", "0")
    m = machine()
    m.start()
    acts = m.silent(0, accepts=True)
    assert isinstance(acts[-1].error, errors.UnavailableError) and "hung?" in acts[-1].error.message


# -- the I/O-thread driver on an in-memory loop -----------------------------------------------
class MemoryLoop:
    """What AsyncStep asks of a ServerLoop, recorded: requests wait for the test to answer."""

    def __init__(self):
        self.requests = {}  # rid -> (address, header, on_reply, kind)
        self.pushed = []
        self.forgotten = []
        self.timers = []
        self.step_watchdog = None
        self._rid = 0

    def request(self, address, header, on_reply, kind="rpc"):
        self._rid += 1
        self.requests[self._rid] = (address, dict(header), on_reply, kind)
        return self._rid

    def push(self, address, header):
        self.pushed.append((address, header))

    def forget(self, rid):
        self.forgotten.append(rid)

    def call_later(self, delay_s, fn):
        self.timers.append((delay_s, fn))

    def run_on_pool(self, fn, on_done):
        on_done(fn())

    def answer(self, rid, reply):
        self.requests[rid][2](reply)


class LocalWorker:
    def __init__(self, result=None):
        self.result = result
        self.aborts = []
        self.pushed = []

    def start_graph(self, msg, respond, loop):
        if self.result is not None:
            respond(self.result)
        return True

    def abort_step(self, msg):
        self.aborts.append(msg)

    def tensor_push(self, msg):
        self.pushed.append(msg)


class Peers:
    def __init__(self, worker, addresses=None):
        self.worker = worker
        self.addresses = addresses or ADDR
        self.gpu_counts_forgotten = 0

    def address(self, task):
        return self.addresses[task]

    def local_worker(self):
        return self.worker

    def forget_gpu_counts(self):
        self.gpu_counts_forgotten += 1


class Session:
    def __init__(self, worker, addresses=None):
        self.master = type("M", (), {"task_name": LOCAL, "peers": Peers(worker, addresses)})()
        self.restarts = 0

    def task_restarted(self):
        self.restarts += 1


class Plan:
    def __init__(self, tasks, fed_fetches=()):
        self.parts = [Part(t) for t in tasks]
        self.fed_fetches = fed_fetches


def async_step(worker, tasks=(PS0, LOCAL), fetches=("a:0", "b:0"), addresses=None):
    loop, session, answers = MemoryLoop(), Session(worker, addresses), []
    plan = Plan(tasks)
    msgs = [{"type": "RunGraph", "step_id": 5, "handle": f"h{i}"} for i in range(len(tasks))]
    step = AsyncStep(session, plan, msgs, list(fetches), {}, answers.append, loop)
    return step, loop, session, answers


def test_async_step_answers_when_the_remote_reply_comes_with_folded_tensors():
    worker = LocalWorker(result={"outputs": {"b:0": 2.0}})
    step, loop, _, answers = async_step(worker)
    step.start()
    [(rid, (address, header, _, kind))] = loop.requests.items()
    assert address == ADDR[PS0] and header["fold"] == LOCAL and kind == "rpc"
    assert answers == []  # this task's part is done, the remote one is not
    loop.answer(rid, {"outputs": {"a:0": 1.0}, "step_id": 5, "keys": ["k"], "tensors": [3.0]})
    assert worker.pushed and worker.pushed[0]["keys"] == ["k"]
    assert answers == [{"outputs": [1.0, 2.0]}]
    assert loop.step_watchdog is not None and not loop.step_watchdog.steps


def test_async_step_error_reply_aborts_this_task_and_answers_the_error():
    worker = LocalWorker()  # this task's part waits (parked) for tensors
    step, loop, session, answers = async_step(worker, (PS0, PS1, LOCAL))
    step.start()
    rid0, rid1 = loop.requests
    loop.answer(rid0, {"ok": False, "code": errors.INVALID_ARGUMENT, "message": "bad feed"})
    [err] = answers
    assert isinstance(err, errors.InvalidArgumentError) and err.message.startswith("bad feed")
    assert [a for a, _ in loop.pushed] == [ADDR[PS1]]
    assert loop.pushed[0][1]["message"] == "Step cancelled because another task failed: bad feed"
    assert worker.aborts and worker.aborts[0]["type"] == "AbortStep"
    assert set(loop.forgotten) == {rid0, rid1} and session.restarts == 0
    loop.answer(rid1, {"outputs": {}})  # late: changes nothing
    assert len(answers) == 1


def test_async_step_pings_and_a_restarted_peer_fails_the_step_as_aborted(monkeypatch):
    monkeypatch.setattr(transport, "PING_EVERY_S", 0.0)  # every watchdog tick pings
    worker = LocalWorker()
    step, loop, session, answers = async_step(worker)
    step.start()
    [(delay, tick)] = loop.timers
    tick()
    pings = [(rid, r) for rid, r in loop.requests.items() if r[3] == "ping"]
    assert len(pings) == 1 and pings[0][1][0] == ADDR[PS0]
    loop.answer(pings[0][0], {"ok": True, "incarnation": 99})
    [err] = answers
    assert isinstance(err, errors.AbortedError) and "restarted while the step was running" in err.message
    assert session.restarts == 1  # plans forgotten: the next step registers afresh


def test_async_step_silent_peer_with_a_refusing_port_fails_as_unavailable(monkeypatch):
    monkeypatch.setattr(transport, "PING_EVERY_S", 0.0)
    with socket.socket() as s:  # a port nothing listens on once it is closed
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"
    step, loop, _, answers = async_step(LocalWorker(), addresses={PS0: dead, LOCAL: None})
    step.start()
    loop.timers[0][1]()  # the watchdog's tick: a ping goes out
    silence = [fn for delay, fn in loop.timers if delay == transport.PING_TIMEOUT_S]
    silence[0]()  # no pong within PING_TIMEOUT_S
    [err] = answers
    assert isinstance(err, errors.UnavailableError) and "is not answering" in err.message


def test_async_step_send_failure_fails_before_this_task_starts():
    class Refusing(MemoryLoop):
        def request(self, address, header, on_reply, kind="rpc"):
            raise errors.ResourceExhaustedError(None, None, "message exceeds the limit")

    worker = LocalWorker(result={"outputs": {}})
    loop, session, answers = Refusing(), Session(worker), []
    step = AsyncStep(session, Plan((PS0, LOCAL)), [{"step_id": 5}, {"step_id": 5}], [], {},
                     answers.append, loop)
    step.start()
    [err] = answers
    assert isinstance(err, errors.ResourceExhaustedError)
    assert worker.aborts  # this task's rendezvous is told, although its part never started


@pytest.mark.parametrize("fed", [True, False])
def test_async_step_answers_fed_fetches_itself(fed):
    worker = LocalWorker(result={"outputs": {"b:0": 2.0}})
    loop, session, answers = MemoryLoop(), Session(worker), []
    plan = Plan((LOCAL,), fed_fetches=("x:0",) if fed else ())
    step = AsyncStep(session, plan, [{"step_id": 5}], ["x:0", "b:0"] if fed else ["b:0"],
                     {"x:0": 9.0} if fed else {}, answers.append, loop)
    step.start()
    assert answers == [{"outputs": [9.0, 2.0] if fed else [2.0]}]
    assert loop.step_watchdog is None  # nothing remote: nothing to watch
