"""The same-host lane (dtf.wire.lane): its framing over a real Unix socket pair, and a
server loop serving clients over it."""
from __future__ import annotations

import socket
import struct
import threading

import numpy as np
import pytest
import zmq
from hypothesis import given, settings, strategies as st

from dtf.train.server import free_port
from dtf.wire import lane, transport


def _pair(**server_kw):
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    return lane.Lane(a), lane.Lane(b, **server_kw)


def _receive(ln, timeout_ms=5000):
    assert ln.wait_readable(timeout_ms), "no message came"
    return [bytes(f) for f in ln.take()]


def test_frames_of_every_kind_arrive_as_sent_and_in_order():
    a, b = _pair()
    arr = np.arange(10, dtype=np.float32)
    a.send([b"header", b"", memoryview(arr).cast("B"), bytearray(b"xyz")])
    a.send([b"second"])
    assert _receive(b) == [b"header", b"", arr.tobytes(), b"xyz"]
    assert _receive(b) == [b"second"]
    assert not b.wait_readable(0)


def test_a_message_split_across_reads_is_assembled():
    a, b = _pair()
    raw_sender = a.sock
    frames = [b"h" * 100, b"d" * 300]
    wire = struct.pack("<I2Q", 2, 100, 300) + b"".join(frames)
    for i in range(0, len(wire), 7):  # seven bytes at a time
        raw_sender.setblocking(True)
        raw_sender.sendall(wire[i:i + 7])
        b.fill()
        assert bool(b.ready) == (i + 7 >= len(wire))
    assert _receive(b) == frames


def test_a_large_message_is_read_whole_while_the_sender_waits_for_room():
    a, b = _pair()
    big = np.random.default_rng(0).integers(0, 255, 3 << 20, dtype=np.uint8)
    sender = threading.Thread(target=a.send, args=([b"head", memoryview(big)],))
    sender.start()  # 3 MiB: more than the socket holds, so it waits for the reader
    got = _receive(b, 10_000)
    sender.join(10)
    assert got[0] == b"head" and np.array_equal(np.frombuffer(got[1], np.uint8), big)


@pytest.mark.parametrize("size", [lane.READ_BYTES, lane.HEAP_BYTES - 8, lane.HEAP_BYTES + 1])
def test_messages_on_either_side_of_the_heap_limit_arrive_whole(size):
    """Up to HEAP_BYTES a message is read into heap memory, past it into a mapping of its
    own: both arrive byte for byte, also one after another into reused memory."""
    a, b = _pair()
    rng = np.random.default_rng(size)
    for _ in range(2):
        body = rng.integers(0, 255, size, dtype=np.uint8)
        sender = threading.Thread(target=a.send, args=([b"h", memoryview(body)],))
        sender.start()
        got = _receive(b, 10_000)
        sender.join(10)
        assert got[0] == b"h" and np.array_equal(np.frombuffer(got[1], np.uint8), body)


def test_two_lanes_writing_large_messages_to_each_other_do_not_stall():
    a, b = _pair()
    payload = b"x" * (4 << 20)
    done = []

    def send_then_read(ln):
        ln.send([payload])
        done.append(_receive(ln, 20_000)[0] == payload)

    threads = [threading.Thread(target=send_then_read, args=(ln,)) for ln in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert done == [True, True]


def test_a_queueing_lane_keeps_what_the_peer_cannot_take_until_flushed():
    a, b = _pair()
    a.blocking = False
    blocked = []
    a.on_blocked = blocked.append
    payload = b"y" * (2 << 20)
    a.send([payload])  # returns at once, whatever the socket took
    assert a.pending and blocked == [a]
    a.send([b"after"])  # queued behind, in order
    while a.pending:
        a.flush()
        b.fill()
    assert _receive(b) == [payload]
    assert _receive(b) == [b"after"]


def test_a_message_over_the_readers_limit_is_dropped_but_its_header_kept():
    a, b = _pair(max_bytes=1000)
    a.send([b'{"id":7}', b"z" * 5000])
    a.send([b"next"])
    first = b.take() if b.wait_readable(5000) else None
    assert bytes(first[0]) == b'{"id":7}' and len(first[1]) == 5000
    assert isinstance(first[1], lane.Oversized)
    assert _receive(b) == [b"next"]  # the lane reads on after the dropped bytes


def test_a_malformed_frame_count_closes_the_lane():
    a, b = _pair()
    a.sock.send(struct.pack("<I", 0))
    assert not b.wait_readable(0)
    assert b.eof


def test_a_closed_peer_reads_as_eof_and_later_sends_are_dropped():
    a, b = _pair()
    a.close()
    b.fill()
    assert b.eof and not b.ready
    b.send([b"nobody"])  # no error: as ZeroMQ, the caller's wait finds the peer gone


# -- a server loop over lanes ----------------------------------------------------------
@pytest.fixture
def echo_loop():
    address = f"127.0.0.1:{free_port()}"
    loop = transport.ServerLoop(address, {"Slow": lambda msg: {"n": msg["n"]}},
                                {"Echo": lambda msg: {"n": msg["n"]}}, "/job:t/task:0")
    loop.start()
    yield address, loop
    loop.stop()


def test_a_client_on_this_host_reaches_a_loopback_task_over_a_lane(echo_loop):
    address, loop = echo_loop
    client = transport.Client(None)
    try:
        assert client.call(address, {"type": "Echo", "n": 1}, 10)["n"] == 1
        assert type(client._socket(address)) is lane.Lane
        # Handler threads' replies reach a lane through the loop too.
        assert client.call(address, {"type": "Slow", "n": 2}, 10)["n"] == 2
        assert len(loop._lanes) == 1
    finally:
        client.close()


def test_without_ipc_or_with_keys_clients_use_zeromq(echo_loop, monkeypatch):
    address, _ = echo_loop
    monkeypatch.setenv("DTF_IPC", "0")
    client = transport.Client(None)
    try:
        assert client.call(address, {"type": "Echo", "n": 3}, 10)["n"] == 3
        assert isinstance(client._socket(address), zmq.Socket)
    finally:
        client.close()


def test_garbage_on_a_lane_drops_that_connection_and_the_task_serves_on(echo_loop):
    address, loop = echo_loop
    rogue = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    rogue.connect("\0" + loop.lane_name)
    rogue.sendall(struct.pack("<I", 1 << 30) + b"\xff" * 64)  # a frame count over the bound
    rogue.settimeout(10)
    assert rogue.recv(10) == b""  # the task closed it
    rogue.close()
    client = transport.Client(None)
    try:
        assert client.call(address, {"type": "Echo", "n": 4}, 10)["n"] == 4
    finally:
        client.close()


def test_a_client_finds_a_restarted_task_through_a_fresh_lane():
    address = f"127.0.0.1:{free_port()}"
    echo = {"Echo": lambda msg: {"n": msg["n"]}}
    loop = transport.ServerLoop(address, {}, echo, "/job:t/task:0")
    loop.start()
    client = transport.Client(None)
    try:
        assert client.call(address, {"type": "Echo", "n": 5}, 10)["n"] == 5
        loop.stop()
        loop = transport.ServerLoop(address, {}, echo, "/job:t/task:0")
        loop.start()
        # The old lane is dead; the request goes to the new task, as ZeroMQ would resend it.
        assert client.call(address, {"type": "Echo", "n": 6}, 10)["n"] == 6
    finally:
        client.close()
        loop.stop()


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.one_of(
    st.binary(max_size=64),
    st.builds(lambda n, lens: struct.pack(f"<I{len(lens)}Q", n, *lens),
              st.integers(0, (1 << 32) - 1), st.lists(st.integers(0, (1 << 64) - 1), max_size=4))),
    max_size=8))
def test_any_bytes_leave_a_task_side_lane_either_reading_or_closed(chunks):
    """Whatever a peer writes, filling a lane never raises, never holds a message over its
    limit and never allocates from a declared length beyond that limit."""
    a, b = _pair(max_bytes=1 << 20)
    try:
        for chunk in chunks:
            a.sock.setblocking(True)
            a.sock.sendall(chunk)
            b.fill()
        for frames in b.ready:
            held = sum(len(f) for f in frames if not isinstance(f, lane.Oversized))
            assert held <= (1 << 20) + lane.HEADER_KEEP
        if b._big is not None:
            assert len(b._big[0]) <= 1 << 20
    finally:
        a.close()
        b.close()


def test_a_wait_of_one_millisecond_polls_the_socket():
    """Under a millisecond left of a wait must still poll (rounding it down to none made
    callers near their deadline spin without ever looking)."""
    _, b = _pair()
    assert not b.wait_readable(1)
    assert b._poller is not None  # it waited on the socket rather than returning at once
