"""The client side of the transport: synchronous requests from any thread, one
connection per (thread, peer), and the error replies both sides exchange.

Messages are dicts encoded by ``codec``; every request carries an ``id`` that its reply
echoes, so a late reply to an abandoned request is recognised and dropped. After a
failed or timed-out call the connection is discarded, so nothing queued for a dead peer
is delivered to its next incarnation.
"""
from __future__ import annotations

import collections
import logging
import threading
import time

import zmq

from dtf.framework import errors
from . import codec, lane as _lane, security as _security, shm
from .endpoints import LOOPBACK_HOSTS, connect_endpoint, connect_lane, loopback_port
from .frames import context, readable, recv_frames, request_ids, send_frames

log = logging.getLogger("dtf.wire")

# Requests a thread keeps awaiting at most (the oldest are forgotten): only requests that
# failed before their replies were read stay long.
MAX_AWAITED = 256
_POLL_SLICE_MS = 500
PING_EVERY_S = 2.0  # how often a caller waiting for a reply checks that its peer lives
PING_TIMEOUT_S = 3.0  # a peer silent this long to a ping is taken for dead

_Lane = _lane.Lane


class Unreachable(Exception):
    """The peer did not answer in time (the caller names the task)."""


_FROM_ENV = object()


class Client:
    """Synchronous requests to servers, one DEALER socket per (thread, address).
    ``security``: the cluster's keys (default: from DTF_CLUSTER_KEYS, else plain)."""

    def __init__(self, security=_FROM_ENV):
        self._local = threading.local()
        self._security = _security.from_env() if security is _FROM_ENV else security
        self._max_bytes = _security.max_message_bytes()
        self._all_sockets: list = []
        self._lock = threading.Lock()
        # A server's I/O thread owns its client: its lanes queue what the peer cannot take
        # at once (the loop flushes them) instead of waiting.
        self.queue_sends = False
        self.on_lane_blocked = None

    def _socket(self, address, kind="rpc"):
        socks = getattr(self._local, "socks", None)
        if socks is None:
            socks = self._local.socks = {}
        key = (address, kind)
        s = socks.get(key)
        if s is not None and type(s) is _Lane and s.eof:
            self._discard(address, kind)  # its task is gone: try its next incarnation
            s = None
        if s is None:
            s = self._lane(address)
            if s is None:
                s = context().socket(zmq.DEALER)
                s.setsockopt(zmq.LINGER, 0)
                if self._security is not None:
                    self._security.configure_client(s)
                s.connect(connect_endpoint(address))
            socks[key] = s
            self._local.generation = getattr(self._local, "generation", 0) + 1
            with self._lock:
                self._all_sockets.append(s)
        return s

    def _lane(self, address):
        """A same-host lane to ``address`` when its task serves one (dtf.wire.lane):
        only without cluster keys, since the lane is not encrypted."""
        if self._security is not None:
            return None
        port = loopback_port(address, LOOPBACK_HOSTS)
        if port is None:
            return None
        ln = connect_lane(port, blocking=not self.queue_sends)
        if ln is not None:
            ln.on_blocked = self.on_lane_blocked
        return ln

    def generation(self) -> int:
        """Changes whenever this thread's set of sockets does."""
        return getattr(self._local, "generation", 0)

    def sockets(self):
        """This thread's sockets (a view)."""
        return getattr(self._local, "socks", {}).values()

    def _discard(self, address, kind="rpc"):
        socks = getattr(self._local, "socks", {})
        s = socks.pop((address, kind), None)
        if s is not None:
            getattr(self._local, "partials", {}).pop(s, None)
            self._local.generation = getattr(self._local, "generation", 0) + 1
            s.close(0)

    def discard_socket(self, sock):
        """Drops ``sock`` (one of this thread's) if it is still in use."""
        socks = getattr(self._local, "socks", {})
        for (address, kind), s in list(socks.items()):
            if s is sock:
                self._discard(address, kind)

    def send(self, address, header, kind="rpc", awaited=True):
        """Sends a request; returns its id. The reply is read with ``receive`` (or
        ``try_receive``) on this thread, in any order among its requests; ``forget`` the
        id of one whose reply will not be read. ``awaited=False``: the caller reads its
        replies itself (the server loop's own requests)."""
        rid = next(request_ids)
        header["id"] = rid
        self._send_message(address, kind, header)
        if awaited:
            pending = self._awaited()
            pending[rid] = None
            if len(pending) > MAX_AWAITED:
                pending.popitem(last=False)
        return rid

    def forget(self, rid):
        """Stops waiting for ``rid``'s reply: if it still comes, it is dropped."""
        self._awaited().pop(rid, None)

    def _awaited(self) -> collections.OrderedDict:
        """This thread's requests whose replies are still to be read: id -> the reply when
        it was read while waiting for another one (a master's two parts on one task
        answer in either order), else None."""
        pending = getattr(self._local, "awaited", None)
        if pending is None:
            pending = self._local.awaited = collections.OrderedDict()
        return pending

    def _take(self, rid):
        """``rid``'s reply if it was read already, and stops awaiting it once it is."""
        pending = self._awaited()
        reply = pending.get(rid)
        if reply is not None:
            del pending[rid]
        return reply

    def _send_message(self, address, kind, header):
        """A peer on this host gets large tensors through shared memory, and is asked to
        answer the same way (``same_host`` in the request); others get them streamed in
        Part messages ahead of the message (codec.STREAM_MIN_BYTES)."""
        local = shm.is_local(address)
        if local:
            header["same_host"] = True
        streams: list = []
        try:
            frames = codec.encode(header, same_host=local, streams=streams)
        except codec.HeaderTooLarge as e:
            raise errors.ResourceExhaustedError(None, None, f"message to {address}: {e}") from None
        self._check_size(frames, address, sum(len(raw) for _, raw in streams) if streams else 0)
        sock = self._socket(address, kind)
        for part in codec.part_messages(streams):
            send_frames(sock, part)
        send_frames(sock, frames)
        if type(sock) is _Lane and sock.eof:
            # Its task had gone (a lane finds out on writing). ZeroMQ would deliver the
            # message once the task's next incarnation listens: so does a fresh socket.
            sock = self._socket(address, kind)
            for part in codec.part_messages(streams):
                send_frames(sock, part)
            send_frames(sock, frames)

    def _check_size(self, frames, address, streamed=0):
        size = streamed
        for f in frames:  # a loop, not a generator: this runs for every message sent
            size += f.nbytes if type(f) is memoryview else len(f)
        if size > self._max_bytes:
            raise errors.ResourceExhaustedError(
                None, None, f"message of {size} bytes to {address} exceeds the limit of "
                f"{self._max_bytes} bytes ({_security.ENV_MAX_MESSAGE})")

    def receive(self, address, rid, timeout_s, kind="rpc", on_wait=None, on_interim=None):
        """Waits for the reply to ``rid``; raises Unreachable after ``timeout_s``.

        ``on_wait(elapsed_s)`` runs every poll slice while waiting (liveness checks); it
        may raise to abandon the wait. ``on_interim(message)`` takes the messages the peer
        sends ahead of the reply (``respond.early``); without it they are dropped.
        """
        kept = self._take(rid)
        if kept is not None:
            return kept
        s = self._socket(address, kind)
        start = time.monotonic()
        deadline = None if timeout_s is None else start + timeout_s
        while True:
            wait_ms = _POLL_SLICE_MS
            if deadline is not None:
                wait_ms = max(0, min(wait_ms, int((deadline - time.monotonic()) * 1000)))
            if readable(s, wait_ms):
                reply = self._read(s, address, rid, on_interim)
                if reply is not None:
                    return reply
                continue
            if deadline is not None and time.monotonic() >= deadline:
                self.forget(rid)
                self._discard(address, kind)
                raise Unreachable(address)
            if on_wait is not None:
                try:
                    on_wait(time.monotonic() - start)
                except BaseException:
                    self.forget(rid)
                    self._discard(address, kind)
                    raise

    def try_receive(self, address, rid, kind="rpc", on_interim=None):
        """The reply to ``rid`` if it has arrived, else None (never blocks)."""
        kept = self._take(rid)
        if kept is not None:
            return kept
        s = self._socket(address, kind)
        while readable(s):
            reply = self._read(s, address, rid, on_interim)
            if reply is not None:
                return reply
        return None

    def reply_socket(self, address, kind="rpc"):
        """This thread's socket to ``address``, on which replies to its requests arrive (to
        poll it beside other things; read it with ``try_receive``)."""
        return self._socket(address, kind)

    def _read(self, sock, address, rid, on_interim):
        """One message from ``sock``: the reply to ``rid``, or None for a Part, a message
        sent ahead of the reply (given to ``on_interim``), another awaited request's reply
        (kept for it) or a late reply to an abandoned request."""
        frames = recv_frames(sock)
        try:
            reply = self.decode_reply(sock, frames)
        except codec.WireError as e:
            reply = unreadable_reply(frames, e, address)
        if reply is None:
            return None
        interim = reply.get("interim") is True
        got = reply.get("id")
        if got != rid:
            if not interim and type(got) is int:
                pending = self._awaited()
                if got in pending:
                    pending[got] = reply
            return None
        if interim:
            if on_interim is not None:
                on_interim(reply)
            return None
        self._awaited().pop(rid, None)
        return reply

    def decode_reply(self, sock, frames):
        """The reply in ``frames`` read from ``sock`` (one of this thread's sockets), or None
        when they were a Part of a tensor streamed ahead of it (kept until it comes)."""
        partials = getattr(self._local, "partials", None)
        if partials is None:
            partials = self._local.partials = {}
        streams = partials.get(sock)
        try:
            reply = codec.decode(frames, streams=streams)
            if reply.get("type") == "Part":
                if len(frames) != 2:
                    raise codec.WireError(f"Part message with {len(frames)} frames (expected 2)")
                if streams is None:
                    streams = partials[sock] = codec.PartialStreams(self._max_bytes)
                streams.add(reply, frames[1])
                return None
        except codec.WireError:
            partials.pop(sock, None)
            raise
        if streams is not None:  # its streamed tensors are in the reply now
            del partials[sock]
        return reply

    def call(self, address, header, timeout_s=None, kind="rpc", on_wait=None):
        rid = self.send(address, header, kind)
        return self.receive(address, rid, timeout_s, kind, on_wait)

    def ping(self, address, timeout_s):
        """A Ping on its own socket: answered by the peer's I/O thread even when busy."""
        return self.call(address, {"type": "Ping"}, timeout_s, kind="ping")

    def check_alive(self, address, incarnation, who, timeout_s=None):
        """Pings ``who`` (a task or master, for messages) at ``address``: UnavailableError if
        it does not answer, AbortedError if it restarted since ``incarnation`` (a request
        sent to the old process will never be answered)."""
        try:
            reply = self.ping(address, PING_TIMEOUT_S if timeout_s is None else timeout_s)
        except Unreachable:
            raise errors.UnavailableError(
                None, None, f"{who} at {address} is not answering (it may have died or never "
                "started)") from None
        if incarnation is not None and reply.get("incarnation") != incarnation:
            raise errors.AbortedError(None, None, f"{who} at {address} restarted while the step "
                                      "was running")
        return reply

    def push(self, address, header):
        """One-way message (no reply), e.g. a tensor for a peer's rendezvous."""
        header["id"] = 0
        self._send_message(address, "push", header)

    def close(self):
        with self._lock:
            for s in self._all_sockets:
                s.close(0)
            self._all_sockets.clear()
        self._local = threading.local()



def error_reply(rid, e, task):
    if isinstance(e, errors.OpError):
        code = e.error_code
        msg = e.message
    else:
        # A request with a missing (KeyError) or ill-typed field is malformed, not a task failure.
        code = errors.INVALID_ARGUMENT if isinstance(e, (ValueError, TypeError, KeyError)) else errors.INTERNAL
        msg = f"{type(e).__name__}: {e}"
    return {"id": rid, "ok": False, "code": code, "message": msg, "task": task}


def unreadable_reply(frames, e, peer):
    """An error reply standing in for a reply that could not be decoded, so that whoever
    waits for it (its id, when readable) fails instead of waiting on."""
    log.warning("unreadable reply from %s: %s", peer, e)
    code = errors.RESOURCE_EXHAUSTED if isinstance(e, codec.StreamTooLarge) else errors.DATA_LOSS
    return {"id": codec.peek_id(frames), "ok": False, "code": code,
            "message": f"unreadable reply from {peer}: {e}"}


def raise_for_error(reply, default_task=""):
    """Turns an error reply into the tf.errors class it names."""
    if reply.get("ok", True):
        return reply
    code = reply.get("code", errors.UNKNOWN)
    raise errors.from_code(code if isinstance(code, int) else errors.UNKNOWN,
                           str(reply.get("message", "remote error")))

