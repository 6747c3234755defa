"""Endpoint choice: where a task listens and how a client reaches it (TCP, or a lane on
this host), and what a task lets a peer's frames weigh."""
from __future__ import annotations

import os
import socket
import sys
import time

import zmq

from . import codec, lane as _lane
from .frames import context, readable, recv_frames, request_ids, send_frames


def tcp_endpoint(address: str) -> str:
    """'host:port' -> 'tcp://host:port' (localhost resolved to 127.0.0.1)."""
    host, _, port = address.rpartition(":")
    if host in ("localhost", ""):
        host = "127.0.0.1"
    return f"tcp://{host}:{port}"


# Tasks on this host's loopback also serve same-host clients without keys over a lane
# (dtf.wire.lane), an abstract Unix socket whose name is random and learned from the task
# over its TCP port: abstract names carry no permissions, so a fixed name could be taken
# first by another local user, who would then receive the clients' graphs and feeds. Only
# the task that owns the TCP port can tell a client its lane, and the client checks that
# the process behind the lane is the one that told it (SO_PEERCRED). ZeroMQ listens on TCP
# alone: its Unix socket listener aborts the process when an accept finds no descriptor
# left. DTF_IPC=0 turns lanes off (then every task is reached over TCP, as between hosts).
LOOPBACK_HOSTS = frozenset(("127.0.0.1", "localhost", ""))
ALL_INTERFACES = frozenset(("0.0.0.0", "*"))
LANE_PROBE_TIMEOUT_S = 1.0  # how long a new client socket waits for a task to name its lane


def ipc_enabled() -> bool:
    return sys.platform.startswith("linux") and os.environ.get("DTF_IPC", "1") != "0"


def loopback_port(address: str, hosts) -> int | None:
    host, _, port = address.rpartition(":")
    if host in hosts and port.isdigit() and int(port) > 0 and ipc_enabled():
        return int(port)
    return None


def _tcp_listens(port: int) -> bool:
    # A connection closed at once (~30 us): refused at once when nothing listens.
    probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        probe.connect(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        probe.close()


# What this process learned from tasks on this host: port -> (lane name, pid of the task);
# and ports whose task did not answer in time: port -> monotonic time until which it is
# not asked again (a server's I/O thread asks too, and must not wait a second per socket).
_known_lanes: dict = {}
_silent_until: dict = {}


def ask_lane(port: int, timeout_s: float = LANE_PROBE_TIMEOUT_S):
    """(lane name, pid) of the task that owns 127.0.0.1:``port``, asked over TCP (a
    ``Lane`` message); None when nothing listens there, it does not answer in time, or it
    serves no lane."""
    if _silent_until and _silent_until.get(port, 0.0) > time.monotonic() or not _tcp_listens(port):
        return None
    sock = context().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    try:
        sock.connect(tcp_endpoint(f"127.0.0.1:{port}"))
        send_frames(sock, codec.encode({"type": "Lane", "id": next(request_ids)}))
        if not readable(sock, int(timeout_s * 1000)):
            _silent_until[port] = time.monotonic() + 10 * timeout_s
            return None
        reply = codec.decode(recv_frames(sock))
    except (zmq.ZMQError, codec.WireError):
        return None
    finally:
        sock.close(0)
    name, pid = reply.get("lane"), reply.get("pid")
    if type(name) is not str or not name.startswith(_lane.NAME_PREFIX) or len(name) > 100 \
            or type(pid) is not int:
        return None
    return name, pid


def connect_lane(port: int, blocking: bool = True):
    """A lane to the task that owns 127.0.0.1:``port``, or None (then use TCP)."""
    known = _known_lanes.get(port)
    if known is not None:
        ln = _lane.connect(*known, blocking=blocking)
        if ln is not None:
            return ln
        _known_lanes.pop(port, None)  # the task is gone, or another process holds its name
    known = ask_lane(port)
    if known is None:
        return None
    ln = _lane.connect(*known, blocking=blocking)
    if ln is not None:
        _known_lanes[port] = known
    return ln


def connect_endpoint(address: str) -> str:
    """Where a new ZeroMQ client socket reaches ``address``."""
    return tcp_endpoint(address)


def bind_endpoints(address: str) -> list:
    """Where a task serving ``address`` listens through ZeroMQ."""
    return [tcp_endpoint(address)]


def wait_released(endpoints, limit_s=2.0):
    """Waits (a bounded while) until each endpoint a stopped server bound can be bound
    again: ZeroMQ closes a listener on its own I/O thread after the socket's close()
    returns, so a task restarted at once on the same port could find it still taken."""
    deadline = time.monotonic() + limit_s
    for endpoint in endpoints:
        while not bindable(endpoint) and time.monotonic() < deadline:
            time.sleep(0.002)


def bindable(endpoint: str) -> bool:
    host, _, port = endpoint.partition("://")[2].rpartition(":")
    host = "" if host in ALL_INTERFACES else host.strip("[]")
    probe = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as ZeroMQ binds
    target = (host, int(port))
    try:
        probe.bind(target)
        return True
    except OSError:
        return False
    finally:
        probe.close()


def max_frame_bytes(max_message_bytes: int) -> int:
    """The largest frame a task reads (ZeroMQ drops a peer that sends a larger one, without
    an answer, and before it allocates the frame: ZeroMQ sets aside a frame's declared size
    when its first bytes arrive): twice its message limit, but no more than a header over
    its limit (codec.MAX_HEADER_BYTES, refused with an answer; dtf senders make no larger
    frame, and refuse such a header themselves), and never less than the largest frame a
    dtf sender makes of a tensor (codec.CHUNK_BYTES) plus room for a header, so that
    tensors over a lower limit here are refused with an error reply the step can report."""
    return max(min(2 * max_message_bytes, codec.MAX_HEADER_BYTES + (1 << 20)),
               codec.CHUNK_BYTES + (1 << 20))


