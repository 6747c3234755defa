"""Telling why a task does not answer: what speaks on its port, and whether it takes our keys.

A CURVE server drops a peer with other keys (or none) without a word, so a client that
only waits cannot tell "wrong keys" from "not started yet". Two quick checks can:

- ``peer_mechanism``: the start of a ZMTP 3 greeting over a plain TCP connection. Every
  ZeroMQ socket sends its signature and then names its security mechanism ("NULL" or
  "CURVE") before any authentication, so this tells an encrypted task from a plain one,
  and both from a port held by something that is not a ZeroMQ socket at all.
- ``keys_accepted``: a throwaway DEALER with our keys and a socket monitor; libzmq reports
  the CURVE handshake's success or failure within milliseconds.
"""
from __future__ import annotations

import socket
import time

import zmq

# Signature (0xFF, 8 bytes of length, 0x7F), as libzmq sends its own.
_SIGNATURE = b"\xff" + b"\x00" * 7 + b"\x01\x7f"
_REST_OF_GREETING = 54  # version (2) + mechanism (20) + as-server (1) + filler (31)
_ZMTP_MAJOR = b"\x03"


def _recv_exactly(sock, count: int) -> bytes:
    data = b""
    while len(data) < count:
        try:
            chunk = sock.recv(count - len(data))
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    return data


def peer_mechanism(host: str, port: int, timeout_s: float = 1.0) -> str | None:
    """"CURVE" or "NULL" (the ZeroMQ security mechanism served on host:port), or None when
    nothing listens there or what listens is not a ZeroMQ (ZMTP 3) socket."""
    host = "127.0.0.1" if host in ("localhost", "0.0.0.0", "") else host.strip("[]")
    try:
        sock = socket.create_connection((host, port), timeout=timeout_s)
    except OSError:
        return None
    try:
        sock.settimeout(timeout_s)
        sock.sendall(_SIGNATURE)
        signature = _recv_exactly(sock, len(_SIGNATURE))
        if len(signature) != len(_SIGNATURE) or signature[0] != 0xFF or not signature[9] & 1:
            return None
        sock.sendall(_ZMTP_MAJOR)  # libzmq sends the rest of its greeting after our version
        rest = _recv_exactly(sock, _REST_OF_GREETING)
        if len(rest) < 22 or rest[0] < 3:
            return None
        return rest[2:22].rstrip(b"\x00").decode("ascii", errors="replace") or None
    except OSError:
        return None
    finally:
        sock.close()


_FAILED = (zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL
           | zmq.EVENT_HANDSHAKE_FAILED_AUTH)


def keys_accepted(endpoint: str, keys, timeout_s: float = 1.0) -> bool | None:
    """Whether the task at ``endpoint`` (tcp://host:port) completes a handshake with
    ``keys`` (a ClusterKeys, or None for plain): True, False, or None when it cannot be
    told within ``timeout_s`` (nothing answers)."""
    from zmq.utils.monitor import recv_monitor_message

    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    if keys is not None:
        keys.configure_client(sock)
    monitor = sock.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED | _FAILED)
    try:
        sock.connect(endpoint)
        deadline = time.monotonic() + timeout_s
        while (left := deadline - time.monotonic()) > 0:
            if not monitor.poll(int(left * 1000) + 1):
                break
            event = recv_monitor_message(monitor)["event"]
            if event == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                return True
            if event & _FAILED:
                return False
        return None
    finally:
        sock.disable_monitor()
        monitor.close(0)
        sock.close(0)
