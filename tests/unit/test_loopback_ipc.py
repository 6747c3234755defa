"""Same-host clients without keys reach a loopback task over a lane whose random name
they learn from the task over its TCP port (transport.connect_lane); ZeroMQ listens on
TCP alone; DTF_IPC=0 keeps everything on TCP."""
from __future__ import annotations

import os
import sys

import pytest
import zmq

from dtf.train.server import free_port
from dtf.wire import lane, transport

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="abstract Unix sockets are Linux's")


def _unix_names():
    """Abstract Unix socket names listening in this network namespace."""
    with open("/proc/net/unix") as f:
        return {line.split()[-1] for line in f.readlines()[1:] if line.split()[-1].startswith("@")}


def test_zeromq_listens_and_connects_on_tcp_alone():
    assert transport.bind_endpoints("127.0.0.1:5000") == ["tcp://127.0.0.1:5000"]
    assert transport.bind_endpoints("0.0.0.0:5000") == ["tcp://0.0.0.0:5000"]
    assert transport.connect_endpoint("localhost:5000") == "tcp://127.0.0.1:5000"
    assert transport.connect_endpoint("example.org:5000") == "tcp://example.org:5000"


@linux_only
def test_a_task_names_its_random_lane_over_tcp_and_frees_it_when_stopped(monkeypatch):
    monkeypatch.delenv("DTF_IPC", raising=False)
    port = free_port()
    assert transport.ask_lane(port) is None  # nothing listens yet: answered at once
    loop = transport.ServerLoop(f"127.0.0.1:{port}", {}, {}, "/job:t/task:0")
    try:
        loop.start()
        name, pid = transport.ask_lane(port)
        assert name == loop.lane_name and pid == os.getpid()
        assert name.startswith(f"dtf-lane-{port}-") and "@" + name in _unix_names()
        assert lane.new_name(port) != name  # drawn anew by every incarnation
    finally:
        loop.stop()
    assert "@" + name not in _unix_names()


@linux_only
def test_a_lane_held_by_another_process_than_the_one_that_named_it_is_not_used(monkeypatch):
    monkeypatch.delenv("DTF_IPC", raising=False)
    port = free_port()
    loop = transport.ServerLoop(f"127.0.0.1:{port}", {}, {"Echo": lambda m: {"n": m["n"]}},
                                "/job:t/task:0")
    loop.start()
    client = transport.Client(None)
    try:
        name, pid = transport.ask_lane(port)
        assert lane.connect(name, pid + 1) is None  # not the process the task said it is
        ln = lane.connect(name, pid)
        assert ln is not None
        ln.close()
        assert client.call(f"127.0.0.1:{port}", {"type": "Echo", "n": 1}, 10)["n"] == 1
        assert type(client._socket(f"127.0.0.1:{port}")) is lane.Lane
    finally:
        client.close()
        loop.stop()


@linux_only
def test_without_ipc_a_server_serves_no_lane_and_clients_use_tcp(monkeypatch):
    port = free_port()
    monkeypatch.setenv("DTF_IPC", "0")
    loop = transport.ServerLoop(f"127.0.0.1:{port}", {}, {"Echo": lambda m: {"n": m["n"]}},
                                "/job:t/task:0")
    loop.start()
    try:
        assert loop.lane_name is None and not any(
            n.startswith(f"@dtf-lane-{port}-") for n in _unix_names())
        # Processes of one cluster may disagree on DTF_IPC: a client asks the task.
        monkeypatch.delenv("DTF_IPC")
        assert transport.ask_lane(port) is None
        client = transport.Client(security=None)
        try:
            assert client.call(f"127.0.0.1:{port}", {"type": "Echo", "n": 2}, 10)["n"] == 2
            assert isinstance(client._socket(f"127.0.0.1:{port}"), zmq.Socket)
        finally:
            client.close()
    finally:
        loop.stop()


@linux_only
def test_a_task_whose_lane_name_is_taken_serves_on_tcp(monkeypatch):
    monkeypatch.delenv("DTF_IPC", raising=False)
    port = free_port()
    squatter = lane.listen(f"dtf-lane-{port}-taken")
    monkeypatch.setattr(lane, "new_name", lambda p: f"dtf-lane-{p}-taken")
    loop = transport.ServerLoop(f"127.0.0.1:{port}", {}, {"Echo": lambda m: {"n": m["n"]}},
                                "/job:t/task:0")
    loop.start()
    client = transport.Client(security=None)
    try:
        assert loop.lane_name is None and transport.ask_lane(port) is None
        assert client.call(f"127.0.0.1:{port}", {"type": "Echo", "n": 3}, 10)["n"] == 3
        assert isinstance(client._socket(f"127.0.0.1:{port}"), zmq.Socket)
    finally:
        client.close()
        loop.stop()
        squatter.close()
