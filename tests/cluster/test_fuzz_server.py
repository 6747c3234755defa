"""Fuzzing a task's message handling: a TaskService on a free 127.0.0.1 port receives random
multipart messages from a raw DEALER socket. Every message is answered with an error reply
or handled as the valid request it is, and afterwards the task still answers pings and
runs a real session step; threads and memory stay bounded.

The properties (``check_*``) are shared with scripts/fuzz_long.py.
"""
from __future__ import annotations

import json
import threading
import time

import numpy as np
import pytest
import zmq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dtf as tf
from dtf.kernels.cpu import jit_loading
from dtf.runtime import service
from dtf.train.server import free_port
from dtf.wire import codec, inprocess, transport
from tests.unit.test_fuzz_wire import _frame, _json_frame, _valid_message, json_values

pytestmark = pytest.mark.cluster

MAX_MESSAGE = 1 << 20  # small limit, so oversized messages are cheap to send
REPLY_TIMEOUT_MS = 10_000
ONE_WAY = ("Ping", "Tensor", "AbortStep", "Part")  # inline types: no reply without an id
TYPES = ["Ping", "Tensor", "AbortStep", "Part", "RegisterGraph", "RunGraph", "DeregisterGraph", "Status",
         "CreateSession", "ExtendSession", "RunStep", "CloseSession", "ListDevices", "CheckCluster",
         "Nope", ""]
THREAD_BOUND = 16 + 8 + 4  # the handler pool, the peer pool, the I/O thread and slack
RSS_BOUND_KB = 96 << 10

CI = settings(max_examples=100, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_node = st.fixed_dictionaries(
    {"name": st.text(max_size=6), "op": st.sampled_from(["Const", "Add", "_Recv", "Placeholder", "X"])},
    optional={"input": st.lists(st.text(max_size=6), max_size=3), "device": st.text(max_size=20),
              "attr": st.dictionaries(st.text(max_size=5), json_values, max_size=3)})
requests = st.fixed_dictionaries(
    {"type": st.one_of(st.sampled_from(TYPES), json_values)},
    optional={"id": st.one_of(st.integers(-5, 2**70), json_values), "nodes": st.lists(_node, max_size=3),
              "session": json_values, "handle": json_values, "step_id": json_values, "key": json_values,
              "tensor": json_values, "feeds": json_values, "fetches": json_values,
              "containers": json_values, "device": json_values, "timeout_ms": st.integers(-1, 50)})


class Fuzzer:
    """A raw DEALER socket to one task: sends a message, checks how it was answered."""

    def __init__(self, address):
        self.address = address
        self.sock = None
        self._next_ping = 1 << 40
        self.connect()

    def connect(self):
        if self.sock is not None:
            self.sock.close(0)
        self.sock = zmq.Context.instance().socket(zmq.DEALER)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.connect(f"tcp://{self.address}")

    def _recv(self):
        assert self.sock.poll(REPLY_TIMEOUT_MS), "the task did not answer"
        reply = codec.decode(self.sock.recv_multipart())
        assert reply.get("ok") is True or isinstance(reply.get("code"), int), reply
        return reply

    def ping(self):
        """Ping, collecting everything that arrives before the ping's own reply."""
        self._next_ping += 1
        self.sock.send_multipart(codec.encode({"type": "Ping", "id": self._next_ping}))
        before = []
        while True:
            reply = self._recv()
            if reply.get("id") == self._next_ping:
                assert reply["ok"] and reply["incarnation"]
                return before
            before.append(reply)

    def check(self, frames):
        """One message: a reply (error or success) unless it is a valid one-way message."""
        try:
            msg = codec.decode(frames)
        except codec.WireError:
            msg = None
        self.sock.send_multipart(frames)
        if msg is not None and msg.get("type") in ONE_WAY:
            # Inline handlers answer (if at all) on the I/O thread, before a ping's reply.
            assert len(self.ping()) <= 1
            return
        reply = self._recv()
        if msg is None:
            assert reply["ok"] is False and reply["code"] in (3, 8), reply
        elif isinstance(msg.get("id"), int):
            assert reply.get("id") == msg["id"], (reply, msg)


def _rss_kb():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def start_task():
    """A TaskService on a free port, remembering threads and RSS from before it started."""
    address = f"127.0.0.1:{free_port()}"
    # The session step of check_still_serves loads Numba's loops (~100 MB) if no test
    # before this file did: load them first, so that the bound measures the fuzzing alone.
    jit_loading.wait()
    baseline = (threading.active_count(), _rss_kb())
    svc = service.TaskService({"fuzz": {0: address}}, "fuzz", 0, security=None,
                              max_message_bytes=MAX_MESSAGE)
    svc.start()
    svc.fuzz_baseline = baseline
    return svc


@pytest.fixture(scope="module")
def task():
    svc = start_task()
    yield svc
    svc.stop()


@pytest.fixture(scope="module")
def fuzzer(task):
    f = Fuzzer(task.address)
    yield f
    f.sock.close(0)


def check_request(fuzzer, header, extra_frames):
    fuzzer.check([_json_frame(header)] + extra_frames)


def check_mutated_request(fuzzer, seed, mtype, data):
    """A message with real tensors, any type, and some of its tensor frames missing."""
    frames = _valid_message(seed)
    header = json.loads(frames[0])
    header["type"] = mtype
    cut = data.draw(st.integers(0, len(frames)))
    fuzzer.check([_json_frame(header)] + frames[1:cut])


@CI
@given(st.lists(_frame, min_size=1, max_size=4))
def test_random_frames_get_error_replies(fuzzer, frames):
    fuzzer.check(frames)


@CI
@given(requests, st.lists(_frame, max_size=2))
def test_random_requests_are_answered(fuzzer, header, frames):
    check_request(fuzzer, header, frames)


@CI
@given(st.integers(0, 2**16), st.sampled_from(TYPES), st.data())
def test_mutated_requests_with_tensors_are_answered(fuzzer, seed, mtype, data):
    check_mutated_request(fuzzer, seed, mtype, data)


@pytest.mark.parametrize("size", [MAX_MESSAGE + 1, int(1.5 * MAX_MESSAGE)])
def test_oversized_message_gets_resource_exhausted(fuzzer, size):
    fuzzer.sock.send_multipart([_json_frame({"type": "Status", "id": 5}), b"\x00" * size])
    reply = fuzzer._recv()
    assert reply["ok"] is False and reply["code"] == 8 and reply["id"] == 5
    assert "limit" in reply["message"]


def test_a_frame_over_the_largest_readable_drops_the_peer_not_the_task(fuzzer):
    too_big = transport.max_frame_bytes(MAX_MESSAGE) + 1
    fuzzer.sock.send_multipart([_json_frame({"type": "Status", "id": 6}), b"\x00" * too_big])
    assert fuzzer.sock.poll(500) == 0  # ZeroMQ cut the connection before allocating it
    fuzzer.connect()
    fuzzer.ping()


def _parts(sid, data: bytes, size: int, start=0):
    return [[_json_frame({"type": "Part", "id": 0, "stream": sid, "offset": off, "total": len(data)}),
             data[off:off + size]] for off in range(start, len(data), size)]


def _wait_until(condition, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _ping_with_stream(fuzzer, rid, sid, n):
    fuzzer.sock.send_multipart([_json_frame(
        {"type": "Ping", "id": rid, "x": {"@r": sid, "dtype": "uint8", "shape": [n]}})])
    while True:
        reply = fuzzer._recv()
        if reply["id"] == rid:
            return reply


def test_streamed_tensors_assemble_or_are_refused_and_abandoned_ones_expire(monkeypatch):
    from dtf.wire import server
    monkeypatch.setattr(server, "STREAM_STALE_S", 0.3)
    task = start_task()
    fuzzer = Fuzzer(task.address)
    try:
        data = bytes(range(256)) * 12
        for part in _parts(1, data, 1000):
            fuzzer.sock.send_multipart(part)
        assert _ping_with_stream(fuzzer, 11, 1, len(data))["ok"] is True
        missing = _ping_with_stream(fuzzer, 12, 2, 10)  # no parts were sent
        assert missing["ok"] is False and missing["code"] == 3 and "missing" in missing["message"]
        for part in _parts(3, data, 1000, start=1000):  # its start never came
            fuzzer.sock.send_multipart(part)
        assert _ping_with_stream(fuzzer, 13, 3, len(data))["ok"] is False
        big = b"\x00" * (MAX_MESSAGE + 10)  # over the task's limit: parts are not kept
        for part in _parts(4, big, 1 << 18):
            fuzzer.sock.send_multipart(part)
        refused = _ping_with_stream(fuzzer, 14, 4, len(big))
        assert refused["ok"] is False and refused["code"] == 8 and "limit" in refused["message"]
        quitter = Fuzzer(task.address)  # a sender that stops mid-stream
        quitter.sock.send_multipart(_parts(5, data, 1000)[0])
        seen = _wait_until(lambda: task._loop._streams)
        swept = _wait_until(lambda: not task._loop._streams)
        quitter.sock.close(0)
        assert seen and swept
        check_still_serves(task, fuzzer)
    finally:
        fuzzer.sock.close(0)
        task.stop()


def check_still_serves(task, fuzzer):
    """Pings are answered and a real session step runs over the wire."""
    fuzzer.ping()
    inprocess.REGISTRY.unregister(task.address, task)  # force the wire, not a direct call
    try:
        with tf.Graph().as_default():
            v = tf.Variable(np.arange(4, dtype=np.float32), name="v")
            out = tf.reduce_sum(v * 2.0)
            with tf.Session(f"grpc://{task.address}") as sess:
                sess.run(v.initializer)
                assert sess.run(out) == 12.0
    finally:
        inprocess.REGISTRY.register(task.address, task)
    assert task._loop._thread.is_alive()


def check_bounded(task):
    """Threads and RSS since before the task started stay within bounds."""
    threads, rss = task.fuzz_baseline
    assert threading.active_count() <= threads + THREAD_BOUND, threading.enumerate()
    assert _rss_kb() - rss < RSS_BOUND_KB, (_rss_kb(), rss)


def test_task_still_serves_a_real_session_over_the_wire(task, fuzzer):
    check_still_serves(task, fuzzer)  # after the fuzzing above (pytest keeps file order)


def test_threads_and_memory_stay_bounded(task, fuzzer):
    for seed in range(150):
        fuzzer.check(_valid_message(seed)[:1])  # refused: tensor frames missing
        check_request(fuzzer, {"type": "Status", "id": seed + 1}, [])
    fuzzer.ping()
    check_bounded(task)
