"""Sheds connections to a task's TCP port that never completed a handshake, when many come.

ZeroMQ accepts every connection it can and keeps one that sends nothing until its
handshake times out (server.HANDSHAKE_S). A local user without keys can therefore fill
a task's descriptors with idle connections; ZeroMQ's listener then fails its accepts (it
retries, busy) and a keyed client's new connection waits behind the flood. ZeroMQ offers
no cap on the connections it accepts, but it reports each one (a socket monitor, with the
descriptor), so a thread of this guard counts them and, when more than ``high`` came within
the handshake window, shuts down the ones that are provably unauthenticated and idle:

- connected to this task's TCP port (checked on the descriptor itself, so a descriptor
  that ZeroMQ closed and the process reused for something else is left alone);
- fewer bytes received than a completed handshake takes (CURVE: greeting, HELLO and
  INITIATE, 64 + 200 + 257 bytes; without keys: the 64-byte greeting), so no connection
  that ever carried a request is touched;
- nothing received for IDLE_S (a ZeroMQ client sends its greeting at once on connecting).

ZeroMQ sees the connection end and closes it. A dtf client whose connection was shed
(only a stalled one can be) reconnects and sends again, as ZeroMQ does for any dropped one.
"""
from __future__ import annotations

import collections
import itertools
import socket
import struct
import threading
import time

import zmq

IDLE_S = 0.2
_CURVE_HANDSHAKE_BYTES = 64 + 200 + 257
_GREETING_BYTES = 64
# struct tcp_info (linux/tcp.h): tcpi_last_data_recv (ms) and tcpi_bytes_received.
_LAST_DATA_RECV = struct.Struct("=I")
_LAST_DATA_RECV_AT = 52
_BYTES_RECEIVED = struct.Struct("=Q")
_BYTES_RECEIVED_AT = 128
_TCP_INFO_LEN = 232
_EVENT = struct.Struct("=hi")
_monitor_ids = itertools.count(1)


def supported() -> bool:
    """Whether the kernel says what a connection received (Linux's TCP_INFO)."""
    return hasattr(socket, "TCP_INFO")


class FloodGuard:
    """Watches a router's accepted connections on TCP ``port``; sheds idle unauthenticated
    ones while more than ``high`` were accepted within the last ``window_s``."""

    def __init__(self, port: int, high: int, window_s: float, curve: bool, name: str):
        self._port = port
        self._high = high
        self._window_s = window_s
        self._handshake_bytes = _CURVE_HANDSHAKE_BYTES if curve else _GREETING_BYTES
        self._recent = collections.deque()  # (monotonic time accepted, descriptor)
        self._monitor = None
        self._stopping = False
        self.shed = 0  # connections shut down so far
        self._thread = threading.Thread(target=self._run, name=f"dtf-flood-{name}", daemon=True)

    def start(self, router):
        """Starts watching ``router``: call before another thread uses it."""
        # An address of its own: pyzmq's default names it by the router's descriptor number,
        # which a router made just after another one closed may reuse before libzmq has
        # released the name. libzmq sends events with a blocking send from the thread that
        # has them (its I/O thread, its reaper): the receiving end takes any number (no
        # high-water mark) and stays open until monitoring has stopped (``detach``), or
        # those threads would hang.
        address = f"inproc://dtf-flood-{next(_monitor_ids)}"
        router.monitor(address, zmq.EVENT_ACCEPTED | zmq.EVENT_MONITOR_STOPPED)
        self._monitor = router.context.socket(zmq.PAIR)
        self._monitor.setsockopt(zmq.RCVHWM, 0)
        self._monitor.setsockopt(zmq.LINGER, 0)
        self._monitor.connect(address)
        self._thread.start()

    def detach(self, router):
        """Stops monitoring ``router``: call on the thread that uses it, before closing it."""
        if self._monitor is not None:
            router.disable_monitor()

    def stop(self):
        """Call after ``detach``."""
        self._stopping = True
        if self._thread.is_alive():
            self._thread.join(5)
        if self._monitor is not None:
            self._monitor.close(0)

    def _run(self):
        monitor = self._monitor
        while not self._stopping:
            try:
                if monitor.poll(250) and not self._take_events(monitor):
                    return  # the router was closed
            except zmq.ZMQError:
                return
            now = time.monotonic()
            recent = self._recent
            while recent and now - recent[0][0] > self._window_s:
                recent.popleft()
            if len(recent) > self._high:
                self._shed(now)

    def _take_events(self, monitor) -> bool:
        """Notes the connections accepted; False once monitoring has stopped."""
        now = time.monotonic()
        while True:
            try:
                frames = monitor.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                return True
            if len(frames) == 2 and len(frames[0]) == _EVENT.size:
                event, fd = _EVENT.unpack(frames[0])
                if event == zmq.EVENT_ACCEPTED:
                    self._recent.append((now, fd))
                elif event == zmq.EVENT_MONITOR_STOPPED:
                    return False

    def _shed(self, now):
        """Shuts down idle unauthenticated connections, oldest first, until half of
        ``high`` are left in the window or the rest are too young to judge. Each one
        looked at leaves the count: shed, past its handshake, or closed already."""
        recent = self._recent
        while len(recent) > self._high // 2 and now - recent[0][0] >= IDLE_S:
            if self._shed_if_idle(recent.popleft()[1]):
                self.shed += 1

    def _shed_if_idle(self, fd) -> bool:
        try:
            sock = socket.socket(fileno=fd)  # borrowed: detached below, never closed here
        except OSError:
            return False  # closed already, or not a socket any more
        try:
            if sock.family not in (socket.AF_INET, socket.AF_INET6) or sock.type != socket.SOCK_STREAM \
                    or sock.getsockname()[1] != self._port:
                return False
            info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _TCP_INFO_LEN)
            if len(info) < _BYTES_RECEIVED_AT + _BYTES_RECEIVED.size:
                return False  # a kernel too old to say what it received: leave it to ZeroMQ
            (received,) = _BYTES_RECEIVED.unpack_from(info, _BYTES_RECEIVED_AT)
            (idle_ms,) = _LAST_DATA_RECV.unpack_from(info, _LAST_DATA_RECV_AT)
            if received >= self._handshake_bytes or idle_ms < IDLE_S * 1000:
                return False
            sock.shutdown(socket.SHUT_RDWR)
            return True
        except OSError:
            return False
        finally:
            sock.detach()
