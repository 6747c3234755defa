"""Frames in and out of one connection: a ZeroMQ socket or a same-host lane alike.

The lowest layer of the transport (see dtf.wire.transport for the parts above it): how
a multipart message is written and read, how readiness is asked, and the poller the
server loop keeps between passes. Request ids come from here, so that a client's and a
lane probe's requests never share one.
"""
from __future__ import annotations

import itertools
import select

import zmq

from . import lane as _lane
from .spin import spin

request_ids = itertools.count(1)

# The hot paths call pyzmq's compiled socket methods with plain-int flags: its Python layer
# (flag enums, a Poller per Socket.poll) cost ~14 us per message sent and received here.
_RawSocket = zmq.backend.Socket
_SNDMORE, _POLLIN, _POLLOUT = int(zmq.SNDMORE), int(zmq.POLLIN), int(zmq.POLLOUT)
_Lane = _lane.Lane
_Oversized = _lane.Oversized
_LANE_IDENT = _lane.IDENT_PREFIX

# The functions below take a ZeroMQ socket or a same-host lane (dtf.wire.lane) alike.


def send_frames(sock, frames):
    """A multipart message; frames under pyzmq's copy threshold are copied, larger ones
    are sent without a copy."""
    if type(sock) is _Lane:
        sock.send(frames)
        return
    last = len(frames) - 1
    for i, frame in enumerate(frames):
        _RawSocket.send(sock, frame, _SNDMORE if i < last else 0, copy=False)


def recv_frames(sock) -> list:
    if type(sock) is _Lane:
        return sock.take()  # after readable() said so
    # A frame says whether more follow (zmq_msg_more): half the cost of asking the socket.
    frame = _RawSocket.recv(sock, 0, copy=False)
    frames = [frame]
    while frame.more:
        frame = _RawSocket.recv(sock, 0, copy=False)
        frames.append(frame)
    return frames


def readable(sock, timeout_ms=0) -> bool:
    if type(sock) is _Lane:
        return sock.wait_readable(timeout_ms)
    # zmq_poll even for a look without waiting: 2.1 us here against 3.3 for reading the
    # socket's EVENTS option through pyzmq.
    return bool(zmq.backend.zmq_poll([(sock, _POLLIN)], timeout_ms))


def poll_readable(items, timeout_ms) -> list:
    """Which of ``items`` (sockets, lanes, file descriptors) are readable, waiting up to
    ``timeout_ms``. A lane counts when it holds a whole message."""
    lanes = [obj for obj in items if type(obj) is _Lane]
    if lanes:
        ready = [ln for ln in lanes if ln.wait_readable(0)]
        if ready:
            return ready
        by_fd = {ln.fd: ln for ln in lanes if not ln.eof}
        polled = [(obj, _POLLIN) for obj in items if type(obj) is not _Lane] + [
            (fd, _POLLIN) for fd in by_fd]
        out = []
        fired = spin(lambda: zmq.backend.zmq_poll(polled, 0)) if timeout_ms else None
        for obj, _ in fired or zmq.backend.zmq_poll(polled, timeout_ms):
            ln = by_fd.get(obj) if type(obj) is int else None
            if ln is None:
                out.append(obj)
            elif ln.wait_readable(0):
                out.append(ln)
        return out
    return [obj for obj, _ in zmq.backend.zmq_poll([(obj, _POLLIN) for obj in items], timeout_ms)]


def context() -> zmq.Context:
    return zmq.Context.instance()


class LoopPoller:
    """What zmq_poll would answer for the loop's watch list, from a select.poll kept
    between passes. A ZeroMQ socket is watched through its ZMQ_FD, which only signals new
    activity: before blocking, a socket whose state may have changed unseen is asked for
    its EVENTS (as zmq_poll asks every socket on every call, twice when it blocks), and a
    socket is asked again when its descriptor fires. The loop's ROUTER changes unseen
    only when the loop itself used it (``router_used``): a pass that only served lanes
    costs one poll, where zmq_poll spent four system calls and pyzmq its list building."""

    def __init__(self, watched, router):
        self._poll = select.poll()
        self._router = router
        self._by_fd: dict = {}  # descriptor -> itself (plain) or its ZeroMQ socket
        self._sockets: list = []  # ZeroMQ sockets other than the router: asked every pass
        self._fresh = True  # nothing asked yet
        for obj, ev in watched:
            if type(obj) is int:
                self._poll.register(obj, (select.POLLIN if ev & _POLLIN else 0)
                                    | (select.POLLOUT if ev & _POLLOUT else 0))
                self._by_fd[obj] = obj
            else:
                fd = obj.getsockopt(zmq.FD)
                self._poll.register(fd, select.POLLIN)
                self._by_fd[fd] = obj
                if obj is not router:
                    self._sockets.append(obj)

    def _poll_now(self):
        return self._poll.poll(0)

    def poll(self, timeout_ms, router_used):
        """[(socket or descriptor, zmq-style events)], waiting up to ``timeout_ms``."""
        ready = [sock for sock in self._sockets if _has_input(sock)]
        if router_used or self._fresh:
            self._fresh = False
            if _has_input(self._router):
                ready.append(self._router)
        out = [(sock, _POLLIN) for sock in ready]
        if out or not timeout_ms:
            fired = self._poll.poll(0)
        else:
            fired = spin(self._poll_now, in_loop=True) or self._poll.poll(timeout_ms)
        if not fired and not out and timeout_ms:
            # A quiet slice asks the router anyway: a use of it the loop failed to note
            # would then cost a delay, never a hang.
            return [(self._router, _POLLIN)] if _has_input(self._router) else []
        for fd, ev in fired:
            obj = self._by_fd.get(fd)
            if type(obj) is int:
                out.append((obj, (_POLLIN if ev & _SELECT_READABLE else 0)
                            | (_POLLOUT if ev & select.POLLOUT else 0)))
            elif obj is not None and obj not in ready and _has_input(obj):
                out.append((obj, _POLLIN))
        return out


# A lane's hang-up or error is "readable": its next read finds out.
_SELECT_READABLE = select.POLLIN | select.POLLHUP | select.POLLERR | select.POLLNVAL
_EVENTS = int(zmq.EVENTS)


def _has_input(sock) -> bool:
    return bool(_RawSocket.get(sock, _EVENTS) & _POLLIN)

