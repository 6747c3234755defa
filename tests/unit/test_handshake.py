"""Telling from a port what serves there: a ZeroMQ socket's mechanism from its greeting, and
whether a CURVE task takes our keys (real sockets on 127.0.0.1)."""
import socket

import zmq

from dtf.train.server import free_port
from dtf.wire import handshake
from dtf.wire.security import ClusterKeys


def _router(keys=None):
    sock = zmq.Context.instance().socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    if keys is not None:
        keys.configure_server(sock)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    return sock, port


def test_the_greeting_tells_curve_from_null_from_other_programs():
    keys = ClusterKeys.generate()
    curve, curve_port = _router(keys)
    plain, plain_port = _router()
    other = socket.socket()
    other.bind(("127.0.0.1", 0))
    other.listen()
    try:
        assert handshake.peer_mechanism("127.0.0.1", curve_port) == "CURVE"
        assert handshake.peer_mechanism("localhost", plain_port) == "NULL"
        assert handshake.peer_mechanism("127.0.0.1", other.getsockname()[1], timeout_s=0.3) is None
        assert handshake.peer_mechanism("127.0.0.1", free_port()) is None  # nothing listens
    finally:
        curve.close(0)
        plain.close(0)
        other.close()


def test_a_curve_handshake_tells_our_keys_from_others():
    keys = ClusterKeys.generate()
    server, port = _router(keys)
    endpoint = f"tcp://127.0.0.1:{port}"
    try:
        assert handshake.keys_accepted(endpoint, keys) is True
        assert handshake.keys_accepted(endpoint, ClusterKeys.generate()) is False
        assert handshake.keys_accepted(endpoint, None) is False
        assert handshake.keys_accepted(f"tcp://127.0.0.1:{free_port()}", keys, timeout_s=0.3) is None
    finally:
        server.close(0)
