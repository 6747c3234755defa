"""A local user without keys (or a careless key holder) against a task process: floods of
idle connections, sockets squatted before a task binds them, half-sent messages, huge
declared sizes. Every task and socket here is on 127.0.0.1, bounded, and stopped by PID.
"""
from __future__ import annotations

import json
import os
import resource
import socket
import struct
import sys
import time

import pytest

import dtf as tf
from dtf.train.server import free_port
from dtf.wire import security
from tests.cluster.conftest import TaskProcess

pytestmark = [pytest.mark.cluster,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux sockets")]

FLOOD = 5000


class Task(TaskProcess):
    """One task process on 127.0.0.1, started with a soft limit of 1,024 open files (what
    a login shell hands out; ``soft_limit``: another) under the hard limit this process
    has (``hard_limit``: a lower one)."""

    def __init__(self, port=None, soft_limit=1024, hard_limit=None):
        self.port = port or free_port()
        self.address = f"127.0.0.1:{self.port}"
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        if hard_limit is not None:
            hard = min(hard, hard_limit) if hard != resource.RLIM_INFINITY else hard_limit

        def limits():
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft_limit, hard), hard))

        super().__init__(f"local|{self.address}", "local", 0, preexec_fn=limits)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def output(self) -> str:
        return self.proc.stdout.read() if self.proc.poll() is not None else ""

    def fds(self) -> int:
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def status_mib(self, field="VmRSS") -> float:
        """A size from /proc/PID/status: VmRSS (memory) or VmSize (address space)."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
        raise AssertionError(f"no {field}")


@pytest.fixture
def tasks():
    started = []

    def start(port=None, soft_limit=1024, hard_limit=None):
        started.append(Task(port, soft_limit, hard_limit).start())
        return started[-1]

    yield start
    for t in started:
        t.kill()


@pytest.fixture
def keys(tmp_path, monkeypatch):
    path = tmp_path / "cluster.key"
    security.ClusterKeys.generate().save(path)
    monkeypatch.setenv(security.ENV_KEYS, str(path))  # inherited by the task processes


@pytest.fixture
def many_files():
    """Room in this process for the connections a test opens."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < FLOOD + 512:
        pytest.skip(f"the hard limit on open files ({hard}) is too low to open {FLOOD}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (FLOOD + 512 if hard == resource.RLIM_INFINITY
                                                else hard, hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _open(family, target, n):
    """``n`` idle connections. TCP connects do not wait (the listener's queue takes them);
    a Unix socket's connect waits while the listener's queue is full."""
    conns = []
    for _ in range(n):
        s = socket.socket(family, socket.SOCK_STREAM)
        if family == socket.AF_UNIX:  # blocking, for at most 10 s (SO_SNDTIMEO bounds it)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", 10, 0))
            s.connect(target)
        else:
            s.setblocking(False)
            try:
                s.connect(target)
            except (BlockingIOError, InterruptedError):
                pass
        conns.append(s)
    return conns


def _close(conns):
    for s in conns:
        s.close()
    conns.clear()


def _wait_for(predicate, within_s):
    deadline = time.monotonic() + within_s
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.05)
    return predicate()


def _doubled(address, value):
    """A run through a new session (so new connections to the task) of x * 2."""
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        y = x * 2.0
        with tf.Session(f"grpc://{address}") as sess:
            return sess.run(y, {x: value}, options=tf.RunOptions(timeout_in_ms=10_000))


# -- 1. a flood of idle connections from a user without keys --------------------------

@pytest.mark.parametrize("hard_limit", [None, 1024], ids=["raised", "hard-1024"])
def test_a_flood_of_idle_connections_neither_kills_a_curve_task_nor_starves_keyed_clients(
        keys, tasks, many_files, monkeypatch, hard_limit):
    """5,000 idle connections from a user without keys. The task raises its soft limit of
    1,024 open files to the hard limit; where that is 1,024 too, it sheds the connections
    that complete no handshake instead (dtf.wire.flood)."""
    monkeypatch.setenv("DTF_CONNECT_TIMEOUT_S", "10")  # a dead task fails the run, never hangs
    task = tasks(hard_limit=hard_limit)
    flood = _open(socket.AF_INET, ("127.0.0.1", task.port), FLOOD)
    try:
        # The task takes the connections off its queue (ZeroMQ has a backlog of 100), and
        # may shed idle ones once many came: wait until it has held hundreds at once.
        peak = []
        assert _wait_for(lambda: not task.alive() or peak.append(task.fds()) or max(peak) > 300, 15), peak
        assert _doubled(task.address, 3.0) == 6.0  # a keyed client, during the flood
        assert task.alive(), task.output()
    finally:
        _close(flood)
    assert _doubled(task.address, 4.0) == 8.0  # and after it
    assert task.alive(), task.output()


# -- 2. same-host sockets squatted by another local process ---------------------------

def _squat(name):
    """A listener on abstract Unix name ``name`` that takes whatever connects to it."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind("\0" + name)
    s.listen(16)
    s.setblocking(False)
    return s


def _heard(squatters) -> bytes:
    """What clients sent the squatters (a client may connect and leave at once: it checks
    who listens before it sends anything)."""
    heard = b""
    for s in squatters:
        while True:
            try:
                conn = s.accept()[0]
            except BlockingIOError:
                break
            conn.setblocking(False)
            try:
                heard += conn.recv(1 << 16)
            except BlockingIOError:
                pass
            conn.close()
    return heard


def _lane_names(port):
    """The abstract names that a task at ``port`` listens on for lanes (any user can
    read them from /proc/net/unix)."""
    with open("/proc/net/unix") as f:
        names = [line.split()[-1] for line in f.readlines()[1:] if len(line.split()) >= 8]
    return sorted({n[1:] for n in names  # accepted connections are listed under it too
                   if n.startswith((f"@dtf-lane-{port}-", f"@dtf-lane-127.0.0.1:{port}"))})


@pytest.mark.parametrize("mode", ["plain", "curve"])
def test_a_task_whose_unix_socket_names_are_taken_starts_and_its_clients_bypass_them(
        mode, tasks, request, monkeypatch):
    if mode == "curve":
        request.getfixturevalue("keys")
    monkeypatch.setenv("DTF_CONNECT_TIMEOUT_S", "10")
    port = free_port()
    # The names same-host sockets had, taken before the task starts.
    squatters = [_squat(f"dtf-lane-127.0.0.1:{port}"), _squat(f"dtf-tcp-127.0.0.1:{port}")]
    try:
        task = tasks(port)
        assert _doubled(task.address, 5.0) == 10.0
        assert _heard(squatters) == b"", "a client talked to the squatter"
    finally:
        _close(squatters)


def test_a_lane_name_taken_over_after_its_task_died_gets_no_client(tasks, monkeypatch):
    """The lane's random name is public (/proc/net/unix): another process may bind it once
    the task is gone. A client that knew it must not talk to that process."""
    monkeypatch.setenv("DTF_CONNECT_TIMEOUT_S", "10")
    task = tasks()
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [])
        y = x * 2.0
        with tf.Session(f"grpc://{task.address}") as sess:
            assert sess.run(y, {x: 1.0}) == 2.0
            names = _lane_names(task.port)
            assert names, "the task serves no lane"
            task.kill()
            squatters = [_squat(n) for n in names]
            try:
                task = tasks(task.port)  # the task comes back on its port
                assert _doubled(task.address, 6.0) == 12.0
                assert _heard(squatters) == b"", "a client talked to the squatter"
            finally:
                _close(squatters)


# -- 4. memory held for peers: half-sent messages, idle connections -------------------

def _lane_of(task):
    names = _lane_names(task.port)
    assert len(names) == 1, names
    return "\0" + names[0]


def _settled_rss(task):
    """RSS once a run has loaded what the task loads on first use."""
    assert _doubled(task.address, 1.0) == 2.0
    return task.status_mib()


def test_a_half_sent_message_costs_memory_only_for_the_bytes_sent(tasks):
    """Three messages of 26 bytes, each declaring 256 MiB (under the 4 GiB limit)."""
    task = tasks()
    before = _settled_rss(task)
    senders = _open(socket.AF_UNIX, _lane_of(task), 3)
    try:
        for s in senders:
            s.setblocking(True)
            s.sendall(struct.pack("<IQ", 1, 256 << 20) + b"{\"type\":\"Pi")
        _doubled(task.address, 1.0)  # the task has read them by the time it answers this
        grown = task.status_mib() - before
        assert grown < 64, f"RSS grew by {grown:.0f} MiB"
    finally:
        _close(senders)
    assert _doubled(task.address, 7.0) == 14.0


def test_idle_lane_connections_give_back_their_memory_when_they_close(tasks, many_files):
    task = tasks(soft_limit=FLOOD + 512)  # room for them all, whatever the task raises
    before = _settled_rss(task)
    idle = _open(socket.AF_UNIX, _lane_of(task), 4000)
    try:
        assert _wait_for(lambda: task.fds() > len(idle), 15), task.fds()
        assert _doubled(task.address, 2.0) == 4.0
    finally:
        _close(idle)
    assert _wait_for(lambda: task.fds() < 200, 15), task.fds()
    assert _doubled(task.address, 3.0) == 6.0
    grown = task.status_mib() - before
    assert grown < 48, f"RSS after the connections closed: {grown:.0f} MiB over before them"


# -- 8. key holders: huge headers, large declared sizes from many connections ----------

def _zmtp_frame_declaring(nbytes) -> bytes:
    """What a ZeroMQ DEALER (no keys: the NULL mechanism) sends to start a message whose
    first frame is ``nbytes`` long: the greeting, READY, and the frame's header."""
    greeting = b"\xff" + bytes(8) + b"\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\0") + bytes(32)
    ready = b"\x05READY" + b"\x0bSocket-Type" + struct.pack(">I", 6) + b"DEALER"
    return greeting + bytes([0x04, len(ready)]) + ready + b"\x02" + struct.pack(">Q", nbytes)


def test_many_connections_declaring_large_frames_do_not_make_a_task_reserve_them(tasks):
    """Five ZeroMQ connections each start a 2 GiB frame (the message limit is 4 GiB)."""
    task = tasks()
    before = task.status_mib("VmSize")
    conns = []
    try:
        for _ in range(5):
            s = socket.create_connection(("127.0.0.1", task.port), timeout=10)
            s.sendall(_zmtp_frame_declaring(2 << 30) + b"{}")
            conns.append(s)
        assert _doubled(task.address, 1.0) == 2.0  # the task has read them by now
        grown = task.status_mib("VmSize") - before
        assert grown < 1024, f"address space grew by {grown:.0f} MiB"
    finally:
        _close(conns)
    assert task.alive()


def _lane_message_start(header: dict, declared_rest: int) -> bytes:
    """The start of a lane message: its header frame whole, then a frame of
    ``declared_rest`` bytes of which nothing is sent."""
    head = json.dumps(header).encode()
    return struct.pack("<IQQ", 2, len(head), declared_rest) + head


def _lane_reply(sock) -> dict:
    sock.settimeout(10)
    data = b""
    while len(data) < 4 or len(data) < 4 + 8 * struct.unpack_from("<I", data)[0] + sum(
            struct.unpack_from(f"<{struct.unpack_from('<I', data)[0]}Q", data, 4)):
        chunk = sock.recv(1 << 16)
        assert chunk, "the task closed the lane without an answer"
        data += chunk
    count = struct.unpack_from("<I", data)[0]
    first = struct.unpack_from("<Q", data, 4)[0]
    start = 4 + 8 * count
    return json.loads(data[start:start + first])


def test_messages_in_flight_from_all_lanes_share_one_budget(tasks, monkeypatch):
    """Five lanes each start a 200 MiB message under a 256 MiB limit: one is taken in
    (its memory taken only as it arrives), the others are refused with an answer."""
    monkeypatch.setenv(security.ENV_MAX_MESSAGE, str(256 << 20))
    task = tasks()
    monkeypatch.delenv(security.ENV_MAX_MESSAGE)
    before = task.status_mib()
    senders = _open(socket.AF_UNIX, _lane_of(task), 5)
    try:
        for i, s in enumerate(senders):
            s.sendall(_lane_message_start({"type": "Status", "id": 100 + i}, 200 << 20))
        refused = []
        for s in senders[1:]:  # the first may or may not be the one taken in
            reply = _lane_reply(s)
            assert reply["ok"] is False and "DTF_MAX_INFLIGHT_BYTES" in reply["message"], reply
            refused.append(reply["id"])
        assert sorted(refused) == [101, 102, 103, 104]
        grown = task.status_mib() - before
        assert grown < 64, f"RSS grew by {grown:.0f} MiB"
    finally:
        _close(senders)
    assert _doubled(task.address, 2.0) == 4.0


def test_huge_headers_never_stop_a_task_answering_pings(tasks):
    """Four headers of 48 MiB (once within the header limit) and eight of 15 MiB (within
    it now), sent at once over TCP, each a list of millions of numbers (slow to parse):
    the task goes on answering pings (before, one went unanswered for over 10 s; peers
    give up after transport.PING_TIMEOUT_S, here the bound is looser for busy machines),
    and answers every header within its limit."""
    import zmq

    from dtf.wire import codec, transport

    task = tasks()
    client = transport.Client(None)
    senders = []
    try:
        client.ping(task.address, 10.0)
        headers = [b'{"type":"Nothing","pad":[' + b"0," * (mib << 19) + b'0],"id":%d}' % (500 + i)
                   for i, mib in enumerate([48] * 4 + [15] * 8)]
        for _ in headers:
            senders.append(zmq.Context.instance().socket(zmq.DEALER))
            senders[-1].setsockopt(zmq.LINGER, 0)
            senders[-1].connect(f"tcp://{task.address}")
        for s, header in zip(senders, headers):  # all at once
            s.send(header, copy=False)
        del headers
        answered = set()
        deadline = time.monotonic() + 60
        while len(answered) < 8 and time.monotonic() < deadline:
            client.ping(task.address, 10.0)  # raises Unreachable if late
            for s in senders[4:]:
                if s not in answered and s.poll(0):
                    reply = codec.decode(transport.recv_frames(s))
                    assert reply["ok"] is False and reply["id"] >= 504, reply
                    answered.add(s)
            time.sleep(0.1)
        assert len(answered) == 8, "a header within the limit got no answer"
    finally:
        client.close()
        for s in senders:
            s.close(0)
    assert _doubled(task.address, 3.0) == 6.0
