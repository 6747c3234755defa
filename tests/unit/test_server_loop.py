"""The server's I/O loop (transport.ServerLoop) in one process: stopping it never hangs,
and timers let go of what they hold once cancelled (a parked step's deadline)."""
from __future__ import annotations

import gc
import select
import threading
import time
import weakref

import numpy as np
import pytest

import dtf as tf
from dtf.framework.graph_def import node_def_of
from dtf.framework.graph_walk import needed_nodes
from dtf.partition import partition
from dtf.placement import ClusterView, place
from dtf.runtime.worker import Worker
from dtf.train.server import free_port
from dtf.wire import endpoints, frames, primitives, transport

DEVICE = "/job:ps/replica:0/task:0/device:CPU:0"


def test_stop_returns_when_the_loop_has_already_left():
    """stop() wakes the loop; a loop that has already left and closed its wake-up (it saw
    ``_stopping`` on its own) must not make that wake-up fail or wait."""
    loop = transport.ServerLoop(f"127.0.0.1:{free_port()}", {}, {}, "/job:t/task:0")
    loop.start()
    loop._stopping = True  # the loop leaves at its next wake-up...
    loop._wakeup.wake()
    loop._thread.join(15)
    assert not loop._thread.is_alive()
    loop.stop()  # ...before stop() runs: its wake-up finds the descriptor closed
    assert loop._wakeup.fileno() == -1


@pytest.mark.parametrize("eventfd", [True, False])
def test_a_wakeup_signals_its_poller_once_until_cleared(monkeypatch, eventfd):
    if not eventfd:
        monkeypatch.delattr(primitives.os, "eventfd", raising=False)  # the pipe it falls back on
    wakeup = primitives.Wakeup()
    poller = select.poll()
    poller.register(wakeup.fileno(), select.POLLIN)
    assert poller.poll(0) == []
    for _ in range(3):
        wakeup.wake()
    assert len(poller.poll(0)) == 1
    wakeup.clear()
    assert poller.poll(0) == []  # three wake-ups, one signal: all taken by one clear
    threading.Thread(target=wakeup.wake).start()
    assert len(poller.poll(5000)) == 1  # another thread's wake-up ends a wait
    wakeup.clear()
    wakeup.close()
    wakeup.wake()  # after close: nothing written (the descriptor may be another file's now)
    wakeup.close()


@pytest.mark.parametrize("lanes", [True, False])
def test_replies_from_handler_threads_each_reach_their_request_whole(monkeypatch, lanes):
    """Handler threads hand their replies to the I/O thread (an outbox and a wake-up):
    many at once, from several threads, each reaches its request, over lanes and over
    ZeroMQ (whose socket the loop watches by its edge-triggered descriptor)."""
    if not lanes:
        monkeypatch.setenv("DTF_IPC", "0")
    address = f"127.0.0.1:{free_port()}"
    payload = np.arange(300_000, dtype=np.float32)  # large enough to be queued on the lane
    loop = transport.ServerLoop(address, {"Echo": lambda msg: {"n": msg["n"], "x": payload}}, {},
                                "/job:t/task:0")
    loop.start()
    clients = [transport.Client(None) for _ in range(3)]
    results = {}

    def ask(k):
        client = clients[k]
        rids = [(n, client.send(address, {"type": "Echo", "n": n})) for n in range(20)]
        results[k] = [(n, client.receive(address, rid, 20)) for n, rid in rids]

    try:
        threads = [threading.Thread(target=ask, args=(k,)) for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        for k in range(3):
            assert [r["n"] for _, r in results[k]] == list(range(20))
            assert all(np.array_equal(r["x"], payload) for _, r in results[k])
    finally:
        for client in clients:
            client.close()
        loop.stop()


def test_a_stopped_server_has_freed_its_port_when_stop_returns():
    """ZeroMQ closes a listener on its own I/O thread after close() returns; stop() waits
    for that, so a task restarted at once on its port binds (without the wait, about 1 in
    40 restarts here found the port taken)."""
    address = f"127.0.0.1:{free_port()}"
    client = transport.Client(None)
    try:
        for n in range(50):
            loop = transport.ServerLoop(address, {}, {"Echo": lambda msg: {"n": msg["n"]}},
                                        "/job:t/task:0")
            loop.start()
            try:
                assert client.call(address, {"type": "Echo", "n": n}, 10)["n"] == n
            finally:
                loop.stop()
            assert all(endpoints.bindable(e) for e in transport.bind_endpoints(address))
    finally:
        client.close()


def test_the_loop_poller_never_misses_a_zeromq_message():
    """The loop watches its ROUTER by ZMQ_FD, which fires on new activity only: a message
    left unread after the loop used the socket must still be reported, at once."""
    import socket

    import zmq

    ctx = transport.context()
    router, dealer = ctx.socket(zmq.ROUTER), ctx.socket(zmq.DEALER)
    port = free_port()
    router.bind(f"tcp://127.0.0.1:{port}")
    dealer.connect(f"tcp://127.0.0.1:{port}")
    plain, peer = socket.socketpair()
    poller = frames.LoopPoller([(router, zmq.POLLIN), (plain.fileno(), zmq.POLLIN)], router)

    def wait(router_used=False):
        # As the loop does: a pass may find nothing (the descriptor fired for ZeroMQ's own
        # traffic, e.g. the connection's handshake); the next one waits again.
        for _ in range(10):
            fired = poller.poll(2000, router_used)
            if fired:
                return fired
            router_used = False
        return []

    try:
        assert poller.poll(0, router_used=False) == []
        dealer.send(b"one")
        assert wait() == [(router, zmq.POLLIN)]
        router.recv_multipart()
        dealer.send(b"two")
        dealer.send(b"three")
        assert wait(router_used=True) == [(router, zmq.POLLIN)]
        time.sleep(0.1)  # both have arrived: reading one consumes the descriptor's signal
        assert router.recv_multipart()[1] == b"two"
        # Used since it was asked: asked again (no wait needed), so the third is seen.
        assert poller.poll(0, router_used=True) == [(router, zmq.POLLIN)]
        assert router.recv_multipart()[1] == b"three"
        assert poller.poll(0, router_used=True) == []
        peer.send(b"x")
        assert wait() == [(plain.fileno(), zmq.POLLIN)]
        plain.recv(1)
        peer.close()  # a hang-up reads as readable: the next read finds the end
        assert wait() == [(plain.fileno(), zmq.POLLIN)]
    finally:
        plain.close()
        dealer.close(0)
        router.close(0)


def _idle_loop():
    """A loop whose I/O thread is not started: the test thread plays it."""
    return transport.ServerLoop(f"127.0.0.1:{free_port()}", {}, {}, "/job:t/task:0")


def _live_timers(loop):
    return [entry for entry in loop._timers.heap if entry[2].fn is not None]


def test_a_cancelled_timer_never_runs_and_lets_go_of_its_function():
    loop = _idle_loop()
    try:
        ran = []
        fn = lambda: ran.append(1)  # noqa: E731
        watch = weakref.ref(fn)
        loop.call_later(0.0, fn).cancel()
        del fn
        assert watch() is None
        loop._run_timers()
        assert ran == []
        kept = loop.call_later(0.0, lambda: ran.append(2))
        loop._run_timers()
        assert ran == [2] and kept.fn is None
        kept.cancel()  # after it ran: nothing to do
    finally:
        loop.stop()


def test_cancelled_timers_do_not_pile_up_in_the_heap():
    loop = _idle_loop()
    try:
        handles = [loop.call_later(300.0, lambda: None) for _ in range(1000)]
        for h in handles[:900]:
            h.cancel()
        assert len(_live_timers(loop)) == 100
        assert len(loop._timers.heap) < 300
    finally:
        loop.stop()


def _with_inputs(op):
    """``op`` and every op it reads, in the graph's order."""
    needed, todo = set(), [op]
    while todo:
        o = todo.pop()
        if o not in needed:
            needed.add(o)
            todo.extend(t.op for t in o.inputs)
            todo.extend(o.control_inputs)
    return [o for o in op.graph.get_operations() if o in needed]


def _queue_worker():
    g = tf.Graph()
    with g.as_default():
        q = tf.FIFOQueue(10, tf.float32, shapes=[[]], shared_name="q")
        dequeue = q.dequeue(timeout_ms=300_000)  # as long as SyncReplicasOptimizer's token wait
        enqueue = q.enqueue([1.0])
    worker = Worker("/job:ps/replica:0/task:0")
    handles = {}
    for name, target in (("deq", dequeue.op), ("enq", enqueue)):
        nodes = [node_def_of(op) for op in _with_inputs(target)]  # a partition runs all it holds
        handles[name] = (worker.register_graph({"device": DEVICE, "nodes": nodes})["handle"],
                         [dequeue.name] if name == "deq" else [], target.name)
    step_ids = iter(range(1, 1000))

    def message(name):
        handle, fetches, _ = handles[name]
        return {"type": "RunGraph", "handle": handle, "step_id": next(step_ids),
                "fetches": fetches, "feeds": {}, "incarnation": worker.incarnation}

    return worker, message


def test_a_parked_step_that_ends_cancels_its_deadline_timer_and_is_freed_at_once():
    worker, message = _queue_worker()
    worker.run_graph(message("enq"))
    worker.run_graph(message("deq"))  # compiles the plan and finds it quick: it may run inline
    loop = _idle_loop()
    gc.disable()  # what the step held must go by reference counting alone
    try:
        replies = []
        msg = message("deq")
        assert worker.start_graph(msg, replies.append, loop)
        assert replies == [] and len(_live_timers(loop)) == 1  # parked until its timeout
        step_rendezvous = weakref.ref(worker.rendezvous._steps[msg["step_id"]])
        worker.run_graph(message("enq"))
        loop._run_soon()  # the queue woke the parked step
        assert len(replies) == 1 and replies[0]["outputs"]
        assert _live_timers(loop) == []
        assert step_rendezvous() is None, "the ended step is kept alive by a reference cycle"
    finally:
        gc.enable()
        loop.stop()


def test_a_handler_that_ends_after_stop_does_not_block_its_thread():
    started, release = threading.Event(), threading.Event()

    def slow(msg):
        if msg.get("wait"):
            started.set()
            release.wait(10)
        return {"done": True}

    address = f"127.0.0.1:{free_port()}"
    loop = transport.ServerLoop(address, {"Slow": slow}, {}, "/job:t/task:0")
    loop.start()
    client = transport.Client(None)  # plain, as the loop
    try:
        # A first reply while the loop is up.
        rid = client.send(address, {"type": "Slow"})
        assert client.receive(address, rid, 10)["done"]
        client.send(address, {"type": "Slow", "wait": True})
        assert started.wait(10)
        loop.stop()
        release.set()
        for thread in loop._pool._threads:
            thread.join(5)
        assert not any(t.is_alive() for t in loop._pool._threads), \
            "a handler thread is stuck replying to a stopped loop"
    finally:
        release.set()
        client.close()


def test_replies_that_come_out_of_order_on_one_socket_each_reach_their_request():
    """A master's thread may send two RunGraphs to one task (its CPU and GPU parts) and
    read the replies in its own order: a reply read while waiting for another is kept."""
    held = []

    def answer_in_reverse(msg, respond, loop):
        if msg["n"] == 1:
            held.append(respond)
        else:
            respond({"n": 2})
            held.pop()({"n": 1})
        return True

    address = f"127.0.0.1:{free_port()}"
    loop = transport.ServerLoop(address, {}, {}, "/job:t/task:0", deferred={"Echo": answer_in_reverse})
    loop.start()
    client = transport.Client(None)
    try:
        first = client.send(address, {"type": "Echo", "n": 1})
        second = client.send(address, {"type": "Echo", "n": 2})
        assert client.receive(address, first, 10)["n"] == 1  # reads the second's reply first
        assert client.try_receive(address, second)["n"] == 2
        third = client.send(address, {"type": "Echo", "n": 1})
        client.forget(third)  # abandoned: its reply, when it comes, is not kept
        fourth = client.send(address, {"type": "Echo", "n": 2})
        assert client.receive(address, fourth, 10)["n"] == 2
        assert not client._awaited()  # the third's late reply was dropped, nothing kept
    finally:
        client.close()
        loop.stop()


class _Respond(list):
    """A request's ``respond``: the reply is appended; interim messages (sent through its
    ``early``) are kept in ``interim``."""

    def __init__(self):
        super().__init__()
        self.interim = []

    def __call__(self, reply):
        self.append(reply)

    def early(self, header):
        self.interim.append(header)


def test_an_early_partitions_last_sends_to_its_master_ride_in_the_reply():
    """A RunGraph marked ``early`` sends tensors for the master's task ahead of its reply,
    but those its partition sends last (a synchronous worker's token) go in the reply
    itself: the master's waiting thread takes them from it, one message fewer."""
    ps, master = "/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0"
    g = tf.Graph()
    with g.as_default():
        with tf.device("/job:ps/task:0"):
            token = tf.constant(2.0) * tf.constant(3.0)
        with tf.device("/job:worker/task:0"):
            out = token + 1.0
    by_name = {op.name: node_def_of(op) for op in g.get_operations()}
    nodes = needed_nodes(by_name.__getitem__, [out.name], [], [])
    parts = partition(nodes, place(nodes, ClusterView({"ps": {0}, "worker": {0}}, "worker", 0)),
                      (), {out.op.name})
    [ps_device] = [d for d in parts if d.startswith(ps)]
    pushed = []
    worker = Worker(ps, send_tensor=lambda task, step_id, items: pushed.append((task, items)))
    handle = worker.register_graph({"device": ps_device, "nodes": parts[ps_device]})["handle"]

    def message(step_id, **mark):
        return {"type": "RunGraph", "handle": handle, "step_id": step_id, "fetches": [],
                "feeds": {}, "incarnation": worker.incarnation, **mark}

    worker.run_graph(message(1))  # compiles the plan, found quick: it may run inline
    assert [task for task, _ in pushed] == [master]  # unmarked: a push of its own
    loop = _idle_loop()
    try:
        respond = _Respond()
        assert worker.start_graph(message(2, early=master), respond, loop)
        [reply] = respond
        assert respond.interim == [] and len(pushed) == 1
        assert reply["step_id"] == 2 and len(reply["keys"]) == 1
        assert reply["keys"][0].endswith(f";{token.name}") and float(reply["tensors"][0]) == 6.0
    finally:
        loop.stop()
