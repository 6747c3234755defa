"""Tasks on the loopback interface are also reached through an abstract Unix socket
(transport.connect_endpoint / bind_endpoints); DTF_IPC=0 keeps them on TCP."""
from __future__ import annotations

import socket
import sys
import time

import pytest
import zmq

from dtf.framework import errors
from dtf.train.server import free_port
from dtf.wire import codec, transport

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="abstract Unix sockets are Linux's")


def _unix_names():
    """Abstract Unix socket names listening in this network namespace."""
    with open("/proc/net/unix") as f:
        return {line.split()[-1] for line in f.readlines()[1:] if line.split()[-1].startswith("@")}


def _listener(port):
    """A ROUTER on the Unix socket a task at 127.0.0.1:port would serve."""
    sock = zmq.Context.instance().socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.bind(f"ipc://@dtf-tcp-127.0.0.1:{port}")
    return sock


@linux_only
def test_loopback_addresses_connect_through_the_unix_socket_when_a_task_listens_there(monkeypatch):
    monkeypatch.delenv("DTF_IPC", raising=False)
    port = free_port()
    for address in (f"127.0.0.1:{port}", f"localhost:{port}"):
        assert transport.connect_endpoint(address) == f"tcp://127.0.0.1:{port}"  # none listens yet
    listener = _listener(port)
    try:
        for address in (f"127.0.0.1:{port}", f"localhost:{port}", f":{port}"):
            assert transport.connect_endpoint(address) == f"ipc://@dtf-tcp-127.0.0.1:{port}"
        assert transport.connect_endpoint(f"10.1.2.3:{port}") == f"tcp://10.1.2.3:{port}"
        assert transport.connect_endpoint(f"example.org:{port}") == f"tcp://example.org:{port}"
        monkeypatch.setenv("DTF_IPC", "0")
        assert transport.connect_endpoint(f"127.0.0.1:{port}") == f"tcp://127.0.0.1:{port}"
    finally:
        listener.close(0)


@linux_only
def test_a_task_on_loopback_or_every_interface_also_listens_on_the_unix_socket(monkeypatch):
    monkeypatch.delenv("DTF_IPC", raising=False)
    assert transport.bind_endpoints("127.0.0.1:5000") == [
        "tcp://127.0.0.1:5000", "ipc://@dtf-tcp-127.0.0.1:5000"]
    assert transport.bind_endpoints("0.0.0.0:5000") == [
        "tcp://0.0.0.0:5000", "ipc://@dtf-tcp-127.0.0.1:5000"]
    assert transport.bind_endpoints("10.1.2.3:5000") == ["tcp://10.1.2.3:5000"]


def test_dtf_ipc_0_keeps_a_task_on_tcp(monkeypatch):
    monkeypatch.setenv("DTF_IPC", "0")
    assert transport.bind_endpoints("127.0.0.1:5000") == ["tcp://127.0.0.1:5000"]


def _ping_through(endpoint):
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(endpoint)
        transport.send_frames(sock, codec.encode({"type": "Ping", "id": 7}))
        assert transport.readable(sock, 5000), f"no answer through {endpoint}"
        return codec.decode(transport.recv_frames(sock))
    finally:
        sock.close(0)


@linux_only
def test_a_server_answers_through_both_sockets_and_frees_the_name_when_stopped(monkeypatch):
    monkeypatch.delenv("DTF_IPC", raising=False)
    port = free_port()
    loop = transport.ServerLoop(f"127.0.0.1:{port}", {}, {}, "/job:t/task:0")
    loop.start()
    try:
        assert f"@dtf-tcp-127.0.0.1:{port}" in _unix_names()
        for endpoint in (f"ipc://@dtf-tcp-127.0.0.1:{port}", f"tcp://127.0.0.1:{port}"):
            reply = _ping_through(endpoint)
            assert reply["id"] == 7 and "error" not in reply
    finally:
        loop.stop()  # returns once ZeroMQ's I/O thread has closed the listeners
    assert f"@dtf-tcp-127.0.0.1:{port}" not in _unix_names()


@linux_only
def test_without_ipc_a_server_listens_on_tcp_alone(monkeypatch):
    monkeypatch.setenv("DTF_IPC", "0")
    port = free_port()
    loop = transport.ServerLoop(f"127.0.0.1:{port}", {}, {}, "/job:t/task:0")
    loop.start()
    try:
        assert f"@dtf-tcp-127.0.0.1:{port}" not in _unix_names()
        assert _ping_through(f"tcp://127.0.0.1:{port}")["id"] == 7
    finally:
        loop.stop()


@linux_only
def test_a_client_reaches_a_task_started_without_ipc(monkeypatch):
    """Processes of one cluster may disagree on DTF_IPC (or run a dtf that predates it):
    a client asks before it uses the Unix socket."""
    port = free_port()
    monkeypatch.setenv("DTF_IPC", "0")
    loop = transport.ServerLoop(f"127.0.0.1:{port}", {}, {}, "/job:t/task:0")
    loop.start()
    try:
        monkeypatch.delenv("DTF_IPC")
        reply = transport.Client(security=None).ping(f"127.0.0.1:{port}", 5.0)
        assert "error" not in reply
    finally:
        loop.stop()


@linux_only
def test_a_unix_name_in_use_is_the_same_clear_error_as_a_port_in_use(monkeypatch):
    monkeypatch.delenv("DTF_IPC", raising=False)
    port = free_port()
    squatter = _listener(port)
    try:
        with pytest.raises(errors.OpError, match=rf"127\.0\.0\.1:{port}.*already in use"):
            transport.ServerLoop(f"127.0.0.1:{port}", {}, {}, "/job:t/task:0")
    finally:
        squatter.close(0)
    assert _port_freed(port), "the server that failed to start kept its TCP port"


def _port_freed(port, within_s=5.0):
    # ZeroMQ closes a listener on its own I/O thread, shortly after close() returns.
    deadline = time.monotonic() + within_s
    while True:
        probe = socket.socket()
        try:
            probe.bind(("127.0.0.1", port))
            return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        finally:
            probe.close()
