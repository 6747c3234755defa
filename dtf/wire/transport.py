"""ZeroMQ transport: a request/reply client with per-thread sockets, and a server loop.

Besides cluster keys (``security``) and the flood guard that watches its listener
(``flood``), this is the only module that imports zmq. Messages are dicts encoded by ``codec``; every
request carries an ``id`` that its reply echoes, so a late reply to an abandoned request
is recognised and dropped. After a failed or timed-out call the socket is discarded, so
nothing queued for a dead peer is delivered to its next incarnation.
"""
from __future__ import annotations

import collections
import heapq
import itertools
import logging
import os
import queue
import select
import socket
import sys
import threading
import time

import zmq

from dtf.framework import errors
from . import codec, flood as _flood, lane as _lane, limits, security as _security, shm

log = logging.getLogger("dtf.wire")

_ids = itertools.count(1)
# Requests a thread keeps awaiting at most (the oldest are forgotten): only requests that
# failed before their replies were read stay long.
MAX_AWAITED = 256
_POLL_SLICE_MS = 500
PING_EVERY_S = 2.0  # how often a caller waiting for a reply checks that its peer lives
PING_TIMEOUT_S = 3.0  # a peer silent this long to a ping is taken for dead
STREAM_STALE_S = 60.0  # a tensor stream whose message has not come by then is dropped
# A connection that has not finished ZeroMQ's handshake by then is dropped: idle ones
# opened by a local user without keys hold a descriptor no longer than this.
HANDSHAKE_S = 5.0
# More connections than this accepted within HANDSHAKE_S (or a quarter of the open-file
# limit, if less) and the idle unauthenticated ones among them are shed (dtf.wire.flood).
FLOOD_HIGH = 1024
# Headers over ASIDE_HEADER_BYTES are parsed off the I/O thread (ServerLoop._decode_aside),
# at most ASIDE_MAX_BYTES of them waiting at a time.
ASIDE_HEADER_BYTES = 1 << 20
ASIDE_MAX_BYTES = 4 * codec.MAX_HEADER_BYTES


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
        for obj, _ in zmq.backend.zmq_poll(polled, timeout_ms):
            ln = by_fd.get(obj) if type(obj) is int else None
            if ln is None:
                out.append(obj)
            elif ln.wait_readable(0):
                out.append(ln)
        return out
    return [obj for obj, _ in zmq.backend.zmq_poll([(obj, _POLLIN) for obj in items], timeout_ms)]


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
_LOOPBACK_HOSTS = frozenset(("127.0.0.1", "localhost", ""))
_ALL_INTERFACES = frozenset(("0.0.0.0", "*"))
LANE_PROBE_TIMEOUT_S = 1.0  # how long a new client socket waits for a task to name its lane


def ipc_enabled() -> bool:
    return sys.platform.startswith("linux") and os.environ.get("DTF_IPC", "1") != "0"


def _loopback_port(address: str, hosts) -> int | None:
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
        send_frames(sock, codec.encode({"type": "Lane", "id": next(_ids)}))
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


def _wait_released(endpoints, limit_s=2.0):
    """Waits (a bounded while) until each endpoint a stopped server bound can be bound
    again: ZeroMQ closes a listener on its own I/O thread after the socket's close()
    returns, so a task restarted at once on the same port could find it still taken."""
    deadline = time.monotonic() + limit_s
    for endpoint in endpoints:
        while not _bindable(endpoint) and time.monotonic() < deadline:
            time.sleep(0.002)


def _bindable(endpoint: str) -> bool:
    host, _, port = endpoint.partition("://")[2].rpartition(":")
    host = "" if host in _ALL_INTERFACES else host.strip("[]")
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


def context() -> zmq.Context:
    return zmq.Context.instance()


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
        port = _loopback_port(address, _LOOPBACK_HOSTS)
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
        rid = next(_ids)
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
            reply = _unreadable_reply(frames, e, address)
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


class ServerLoop:
    """Serves one ROUTER socket. ``handlers[type](msg) -> reply dict`` run on a thread
    pool; ``inline[type](msg) -> reply dict | None`` run on the I/O thread (fast, never
    blocking: pings and tensor pushes); ``deferred[type](msg, respond, loop) -> bool`` run
    on the I/O thread and may answer later through ``respond(reply or exception)``, going
    on with the loop's ``call_soon``, ``call_later``, ``request`` and ``run_on_pool``;
    False hands the message to ``handlers``. Handler exceptions become error replies.
    ``thread_init()`` runs first on the I/O thread and on every handler thread."""

    def __init__(self, address, handlers, inline, task_name, security=None, max_workers=16,
                 max_message_bytes=None, deferred=None, on_refused=None, thread_init=None):
        self.address = address
        self._handlers = handlers
        self._inline = dict(inline, Lane=self._describe_lane)
        self._deferred = deferred or {}
        self._on_refused = on_refused or {}  # type -> fn(header, error) for refused one-way messages
        self._soon = collections.deque()  # call_soon's functions, run by the I/O thread
        self._timers: list = []  # heap of (monotonic time, seq, TimerHandle) for call_later
        self._cancelled_timers = 0  # handles in the heap whose timer was cancelled
        self._timer_seq = itertools.count()
        self._io_ident = None
        # Requests the I/O thread itself sends (a master step's RunGraphs): their replies
        # arrive on this client's sockets, which the loop polls beside the ROUTER.
        self._io_client = Client(security)
        self._io_client.queue_sends = True
        self._writing: set = set()  # lanes with bytes the peer could not take yet
        self._io_client.on_lane_blocked = self._writing.add
        self._awaiting: dict = {}  # request id -> on_reply(reply dict)
        self._streams: dict = {}  # sender identity -> codec.PartialStreams
        self.step_watchdog = None  # liveness checks of the master steps it runs (async_step)
        self._sweeping = False
        self._task = task_name
        self._max_bytes = max_message_bytes or _security.max_message_bytes()
        # What all peers together may make the task set aside for messages still arriving.
        self._budget = limits.InflightBudget(limits.max_inflight_bytes(self._max_bytes))
        # A flood of idle connections meets the hard limit on descriptors, not the soft
        # default of 1,024; each one that completes no handshake is dropped after
        # HANDSHAKE_S (ZeroMQ's default: 30 s), keyed or not.
        open_files = limits.raise_open_file_limit()
        self._ctx = context()
        self._router = self._ctx.socket(zmq.ROUTER)
        self._router.setsockopt(zmq.LINGER, 0)
        self._router.setsockopt(zmq.HANDSHAKE_IVL, int(HANDSHAKE_S * 1000))
        # Messages over the limit get an error reply. ZeroMQ itself drops a peer whose frame
        # exceeds max_frame_bytes before allocating it, so no message can make a task
        # allocate without bound. dtf clients check the limit before sending (Client.send).
        self._router.setsockopt(zmq.MAXMSGSIZE, max_frame_bytes(self._max_bytes))
        if security is not None:
            security.configure_server(self._router)
        self._endpoints = bind_endpoints(address)
        try:
            for endpoint in self._endpoints:
                self._router.bind(endpoint)
        except zmq.ZMQError as e:
            self._router.close(0)
            raise errors.UnknownError(
                None, None, f"Could not start server for {task_name} at {address}: {e.strerror}"
                + (" (the address is already in use)" if e.errno == zmq.EADDRINUSE else "")) from None
        # Idle connections that complete no handshake are shed when many come (dtf.wire.flood).
        _, _, tcp_port = address.rpartition(":")
        self._flood_guard = None
        if tcp_port.isdigit() and _flood.supported():
            high = FLOOD_HIGH if open_files < 0 else max(64, min(FLOOD_HIGH, open_files // 4))
            self._flood_guard = _flood.FloodGuard(int(tcp_port), high, HANDSHAKE_S,
                                                  curve=security is not None, name=task_name)
        # Same-host clients without keys talk to a loopback task over a lane (dtf.wire.lane).
        self._lanes: dict = {}  # ident -> accepted lane
        self._lane_generation = 0
        port = _loopback_port(address, _LOOPBACK_HOSTS | _ALL_INTERFACES)
        self.lane_name = _lane.new_name(port) if security is None and port is not None else None
        # A name taken (by chance: it is random) leaves the task on TCP alone.
        self._lane_listener = _lane.listen(self.lane_name) if self.lane_name else None
        if self._lane_listener is None:
            self.lane_name = None
        self._lane_chunk = bytearray(_lane.READ_BYTES)  # the I/O thread reads every lane into it
        # Other threads hand the I/O thread their replies ((ident, frames), in order) and
        # functions to run (call_soon), then wake it.
        self._outbox = collections.deque()
        self._wakeup = Wakeup()
        self._router_used = True  # used since the loop last asked it for its EVENTS
        self._thread_init = thread_init
        self._pool = HandlerPool(max_workers, f"dtf-{task_name}", thread_init)
        self._aside = HandlerPool(1, f"dtf-headers-{task_name}")  # see _decode_aside
        self._aside_bytes = 0
        self._stopping = False
        self._thread = threading.Thread(target=self._loop, name=f"dtf-io-{task_name}", daemon=True)
        self.messages_served = 0

    def start(self):
        if self._flood_guard is not None:
            self._flood_guard.start(self._router)  # before the I/O thread uses the router
        self._thread.start()

    def call_soon(self, fn):
        """Runs ``fn()`` on the I/O thread, after the message being handled (from any thread)."""
        self._soon.append(fn)
        if threading.get_ident() != self._io_ident:
            self._wakeup.wake()

    def send_from_thread(self, ident, messages):
        """Sends ``messages`` (lists of frames) to the client ``ident`` from a thread other
        than the I/O thread: the I/O thread sends them, in order, once woken."""
        self._outbox.extend((ident, frames) for frames in messages)
        self._wakeup.wake()

    def call_later(self, delay_s, fn) -> "TimerHandle":
        """Runs ``fn()`` on the I/O thread after ``delay_s`` (call from the I/O thread).
        Its handle's ``cancel()`` (also from the I/O thread) lets go of ``fn`` at once."""
        handle = TimerHandle(self, fn)
        heapq.heappush(self._timers, (time.monotonic() + delay_s, next(self._timer_seq), handle))
        return handle

    def _timer_cancelled(self):
        # A step's deadline timer is cancelled when the step ends, usually long before
        # the deadline: drop such entries once they are most of the heap.
        self._cancelled_timers += 1
        if self._cancelled_timers > 64 and 2 * self._cancelled_timers > len(self._timers):
            self._timers = [t for t in self._timers if t[2].fn is not None]
            heapq.heapify(self._timers)
            self._cancelled_timers = 0

    def request(self, address, header, on_reply, kind="rpc"):
        """Sends a request from the I/O thread; ``on_reply(reply dict)`` runs on the I/O
        thread when its reply arrives. Returns the request id (see ``forget``)."""
        rid = self._io_client.send(address, header, kind, awaited=False)
        self._awaiting[rid] = on_reply
        return rid

    def forget(self, rid):
        self._awaiting.pop(rid, None)

    def push(self, address, header):
        """A one-way message from the I/O thread."""
        self._io_client.push(address, header)

    def run_on_pool(self, fn, on_done):
        """Runs ``fn()`` on a handler thread, then ``on_done(result or exception)`` on the
        I/O thread."""

        def job():
            try:
                result = fn()
            except Exception as e:  # noqa: BLE001 - handed over
                result = e
            self.call_soon(lambda: on_done(result))

        self._pool.submit(job)

    def _run_timers(self):
        now = time.monotonic()
        while self._timers and self._timers[0][0] <= now:
            _, _, handle = heapq.heappop(self._timers)
            fn, handle.fn = handle.fn, None
            if fn is None:
                self._cancelled_timers -= 1
            else:
                self._soon.append(fn)
        self._run_soon()

    def _poll_ms(self):
        if self._soon:
            return 0
        if not self._timers:
            return 1000
        return max(0, min(1000, int((self._timers[0][0] - time.monotonic()) * 1000) + 1))

    def _on_client_replies(self, sock):
        if type(sock) is _Lane:  # the poll said readable: one read takes all it holds
            sock.fill()
            while sock.ready:
                self._on_client_reply(sock, sock.take())
            return
        while readable(sock):
            self._on_client_reply(sock, recv_frames(sock))

    def _on_client_reply(self, sock, frames):
        try:
            reply = self._io_client.decode_reply(sock, frames)
        except codec.WireError as e:
            reply = _unreadable_reply(frames, e, self._task)
        if reply is None:
            return
        on_reply = self._awaiting.pop(reply.get("id"), None)
        if on_reply is not None:  # else a late reply to a forgotten request
            on_reply(reply)

    def _run_soon(self):
        while self._soon:
            fn = self._soon.popleft()
            try:
                fn()
            except Exception:  # noqa: BLE001 - no callback may stop the I/O thread
                log.exception("%s: a deferred handler failed", self._task)

    def _loop(self):
        self._io_ident = threading.get_ident()
        if self._thread_init is not None:
            self._thread_init()
        wake_fd = self._wakeup.fileno()
        own = [(self._router, _POLLIN), (wake_fd, _POLLIN)]
        listener_fd = None
        if self._lane_listener is not None:
            listener_fd = self._lane_listener.fileno()
            own.append((listener_fd, _POLLIN))
        poller, lanes, known = None, {}, None
        while not self._stopping:
            state = (self._io_client.generation(), self._lane_generation)
            if state != known or self._writing:  # sockets came or went, or a lane must write
                watched, lanes = self._watch_list(own)
                poller = _LoopPoller(watched, self._router)
                known = state
            try:
                fired = poller.poll(self._poll_ms(), self._router_used)
            except zmq.ZMQError:
                break
            self._router_used = False
            events, served, replied = set(), [], []
            for sock, ev in fired:
                if type(sock) is not int:
                    events.add(sock)
                elif sock == wake_fd:
                    self._take_outbox()
                elif sock == listener_fd:
                    self._accept_lanes()
                else:  # the poller names a lane by its descriptor
                    ln = lanes.get(sock)
                    if ln is not None:
                        (served if ln.ident else replied).append((ln, ev))
            # Drain by asking readable(): raising zmq.Again per empty read cost ~7% of a step.
            if self._router in events:
                self._router_used = True
                while readable(self._router):
                    frames = recv_frames(self._router)
                    try:
                        self._on_message(frames)
                    except Exception:  # noqa: BLE001 - no message may stop the I/O thread
                        log.exception("%s: failed to handle a message", self._task)
                    self._run_soon()
            for ln, ev in served:
                self._serve_lane(ln, ev)
            for ln, ev in replied:
                if ev & _POLLOUT:
                    ln.flush()
            for sock in events:
                if sock is not self._router:
                    self._serve_replies(sock)
            for ln, _ in replied:
                self._serve_replies(ln)
            self._run_timers()
        self._close_sockets()

    def _serve_replies(self, sock):
        """Handles the replies to the loop's own requests that ``sock`` brought."""
        try:
            self._on_client_replies(sock)
        except Exception:  # noqa: BLE001
            log.exception("%s: failed to handle a reply", self._task)
        self._run_soon()
        if type(sock) is _Lane and sock.eof:
            self._io_client.discard_socket(sock)

    def _take_outbox(self):
        """What other threads asked for: their replies go out, in order (call_soon's
        functions run later in the pass). Cleared before the outbox is emptied: a wake-up
        after that is seen by the next poll."""
        self._wakeup.clear()
        outbox = self._outbox
        while outbox:
            ident, frames = outbox.popleft()
            self._send_to(ident, frames)

    def _watch_list(self, own):
        """What the loop polls: its own sockets, its requests' sockets, the lanes (by
        descriptor, for writing too when they hold unsent bytes) and a lane index."""
        # In place: the lanes' on_blocked is this set's add.
        self._writing.difference_update([ln for ln in self._writing if not ln.pending or ln.eof])
        watched, lanes = list(own), {}
        for sock in itertools.chain(self._io_client.sockets(), self._lanes.values()):
            if type(sock) is not _Lane:
                watched.append((sock, _POLLIN))
            elif not sock.eof:
                lanes[sock.fd] = sock
                watched.append((sock.fd, _POLLIN | (_POLLOUT if sock.pending else 0)))
        return watched, lanes

    def _describe_lane(self, msg):
        """Answers ``Lane`` (over TCP: only the task that owns the port gets the question):
        where same-host clients without keys reach this task faster, and the process
        they must find there."""
        return {"lane": self.lane_name, "pid": os.getpid()}

    def _accept_lanes(self):
        for ln in _lane.accept(self._lane_listener, self._max_bytes, self._lane_chunk, self._budget):
            ln.on_blocked = self._writing.add
            self._lanes[ln.ident] = ln
            self._lane_generation += 1

    def _serve_lane(self, ln, ev):
        """Writes what a lane could not take before, and handles the messages it brought."""
        if ev & _POLLOUT:
            ln.flush()
        if ev & ~_POLLOUT:
            ln.fill()
        while ln.ready:
            frames = ln.take()
            try:
                if type(frames[-1]) is _Oversized and frames[-1].over_budget:
                    self._refuse_over_budget(ln.ident, frames)
                else:
                    self._on_message([ln.ident] + frames)
            except Exception:  # noqa: BLE001 - no message may stop the I/O thread
                log.exception("%s: failed to handle a message", self._task)
            self._run_soon()
        if ln.eof:  # the client went away (or broke the lane's format)
            self._lanes.pop(ln.ident, None)
            self._drop_streams(ln.ident)
            ln.close()
            self._lane_generation += 1

    def _send_to(self, ident, frames):
        """A message to the client named ``ident`` (a ZeroMQ identity or a lane's)."""
        if type(ident) is bytes and ident[:1] == _LANE_IDENT:
            ln = self._lanes.get(ident)
            if ln is not None:  # else it went away, as ZeroMQ drops one to a gone peer
                ln.send(frames)
            return
        send_frames(self._router, [ident] + frames)
        self._router_used = True

    def _refuse_over_budget(self, ident, body):
        """A message within the limit that the task had no room for: other peers' messages
        being received hold its budget for messages in flight."""
        size = sum(map(len, body))
        self._partial_streams(_ident_key(ident)).refuse_rest(size)
        self._refuse(ident, body, errors.ResourceExhaustedError(
            None, None, f"message of {size} bytes refused by {self._task}: messages still "
            f"arriving hold {self._budget.held} of the {self._budget.max_bytes} bytes it sets "
            f"aside for them ({limits.ENV_MAX_INFLIGHT})"))

    def _on_message(self, frames, msg=None):
        """Handles one message; ``msg``: its header already decoded (``_decode_aside``)."""
        ident, body = frames[0], frames[1:]
        if msg is None:
            self.messages_served += 1
            size = sum(map(len, body))
            if size > self._max_bytes:
                # If it was a Part, the message it belongs to must fail the same way.
                self._partial_streams(_ident_key(ident)).refuse_rest(size)
                self._refuse(ident, body, errors.ResourceExhaustedError(
                    None, None, f"message of {size} bytes refused by {self._task}: the limit is "
                    f"{self._max_bytes} bytes ({_security.ENV_MAX_MESSAGE})"))
                return
            # The sender's socket identity keys its streams (a zmq.Frame hashes by object).
            sender = _ident_key(ident) if self._streams or len(body) == 2 else None
            streams = self._streams.get(sender) if self._streams else None
            if len(body[0]) > ASIDE_HEADER_BYTES:
                self._decode_aside(ident, body, sender, streams)
                return
            try:
                msg = codec.decode(body, streams=streams)
                if msg.get("type") == "Part":
                    self._on_part(sender, msg, body)
                    return
            except codec.WireError as e:
                self._drop_streams(sender)
                self._refuse_malformed(ident, body, e)
                return
            if streams is not None:  # its streamed tensors are in the message now
                self._drop_streams(sender)
        mtype = msg.get("type")
        rid = msg.get("id")
        if not isinstance(mtype, str):  # an unhashable type would break the lookups
            mtype = repr(mtype)[:100]
        fn = self._inline.get(mtype)
        if fn is not None:
            try:
                reply = fn(msg)
            except Exception as e:  # noqa: BLE001 - reported to the caller
                reply = _error_reply(rid, e, self._task)
            if reply is not None and rid:
                reply["id"] = rid
                self._send_now(ident, reply)
            return
        fn = self._deferred.get(mtype)
        if fn is not None:
            respond = self._responder(ident, rid, msg)
            try:
                if fn(msg, respond, self):
                    return
            except Exception as e:  # noqa: BLE001 - reported to the caller
                respond(e)
                return
        fn = self._handlers.get(mtype)
        if fn is None:
            log.warning("%s: unknown message type %r", self._task, mtype)
            self._send_now(ident, _error_reply(rid, errors.UnimplementedError(
                None, None, f"unknown message type {mtype!r} (protocol v{codec.PROTOCOL_VERSION})"),
                self._task))
            return
        self._pool.submit(self._run_handler, fn, msg, ident, rid)

    def _decode_aside(self, ident, body, sender, streams):
        """Parses a large header on a thread of its own, one at a time: the JSON parser
        holds the interpreter while it runs, so the I/O thread gets a turn between two
        such headers instead of after all of them (4 headers of 48 MiB held it up for
        2.6 s, past the 3 s in which peers expect an answer to a ping). What waits for
        that thread is bounded (ASIDE_MAX_BYTES); the message is handled on the I/O
        thread once parsed, possibly after messages that came after it."""
        nbytes = len(body[0])
        if self._aside_bytes + nbytes > ASIDE_MAX_BYTES:
            self._drop_streams(sender)
            self._refuse(ident, body, errors.ResourceExhaustedError(
                None, None, f"header of {nbytes} bytes refused by {self._task}: "
                f"{self._aside_bytes} bytes of large headers already wait to be parsed"))
            return
        self._aside_bytes += nbytes
        if streams is not None:  # the message owns them now
            self._streams.pop(sender, None)

        def parse():
            try:
                result = codec.decode(body, streams=streams)
            except codec.WireError as e:
                result = e
            self.call_soon(lambda: self._decoded_aside(ident, body, streams, nbytes, result))

        self._aside.submit(parse)

    def _decoded_aside(self, ident, body, streams, nbytes, result):
        self._aside_bytes -= nbytes
        if streams is not None:
            streams.close()
        if isinstance(result, codec.WireError):
            self._refuse_malformed(ident, body, result)
        else:
            self._on_message([ident] + body, result)

    def _refuse_malformed(self, ident, body, e):
        self._refuse(ident, body, errors.ResourceExhaustedError(
            None, None, f"{e} refused by {self._task} ({_security.ENV_MAX_MESSAGE})")
            if isinstance(e, codec.StreamTooLarge) else errors.InvalidArgumentError(
            None, None, f"malformed message refused by {self._task}: {e}"))

    def _refuse(self, ident, body, error):
        """Answers a message that cannot be read with ``error``. A one-way message has no
        one waiting for that answer: its ``on_refused`` handler (by type, from its header
        when readable) tells whom it concerns, e.g. the step a refused tensor belonged to."""
        log.warning("%s: %s", self._task, error.message)
        header = codec.peek_header(body)
        rid = header.get("id") if header is not None else None
        self._send_now(ident, _error_reply(rid if isinstance(rid, int) else None, error, self._task))
        mtype = header.get("type") if header is not None and not rid else None
        on_refused = self._on_refused.get(mtype) if isinstance(mtype, str) else None
        if on_refused is not None:
            try:
                on_refused(header, error)
            except Exception:  # noqa: BLE001 - best effort on a message already refused
                log.exception("%s: handling a refused %s failed", self._task, header.get("type"))

    def _on_part(self, sender, msg, body):
        """A piece of a tensor streamed ahead of its message: copied into place at once."""
        if len(body) != 2:
            raise codec.WireError(f"Part message with {len(body)} frames (expected 2)")
        self._partial_streams(sender).add(msg, body[1])

    def _partial_streams(self, sender):
        partial = self._streams.get(sender)
        if partial is None:
            partial = self._streams[sender] = codec.PartialStreams(self._max_bytes, self._budget)
            if not self._sweeping:
                self._sweeping = True
                self.call_later(STREAM_STALE_S, self._sweep_streams)
        partial.touched = time.monotonic()
        return partial

    def _sweep_streams(self):
        """Drops streams whose message never came (the sender died mid-way)."""
        cutoff = time.monotonic() - STREAM_STALE_S
        for ident in [i for i, p in self._streams.items() if p.touched < cutoff]:
            log.warning("%s: dropped %d bytes of a tensor stream whose message never came",
                        self._task, self._streams[ident].held_bytes())
            self._drop_streams(ident)
        self._sweeping = bool(self._streams)
        if self._sweeping:
            self.call_later(STREAM_STALE_S, self._sweep_streams)

    def _drop_streams(self, sender):
        """Forgets a sender's streams, giving back to the budget what they held."""
        partial = self._streams.pop(sender, None)
        if partial is not None:
            partial.close()

    def _run_handler(self, fn, msg, ident, rid):
        try:
            reply = fn(msg)
        except Exception as e:  # noqa: BLE001 - reported to the caller
            reply = e
        self._responder(ident, rid, msg)(reply)

    def _responder(self, ident, rid, msg):
        return _Responder(self, ident, rid, msg)

    def _send_now(self, ident, reply):
        self._send_to(ident, codec.encode(reply))

    def stop(self):
        if self._stopping:
            return
        self._stopping = True
        if not self._thread.is_alive():  # never started: nothing to wake
            self._close_sockets()
        else:
            self._wakeup.wake()
            self._thread.join(5)
        self._pool.shutdown()
        self._aside.shutdown()
        if self._flood_guard is not None:
            self._flood_guard.stop()
        _wait_released(self._endpoints)

    def _close_sockets(self):
        if self._flood_guard is not None:
            self._flood_guard.detach(self._router)
        self._router.close(0)
        self._wakeup.close()
        self._outbox.clear()
        for ln in self._lanes.values():
            ln.close()
        self._lanes.clear()
        if self._lane_listener is not None:
            self._lane_listener.close()
        self._io_client.close()


class _Responder:
    """``respond(reply dict | None | exception)`` for one request, from any thread: the I/O
    thread sends at once, others through the loop's outbox (``send_from_thread``).
    ``respond.early(header)`` sends a message ahead of the reply (``interim``, with the
    request's id): the requester reads it on the connection it awaits the reply on
    (RunGraph's tensors for the requester's own task, see Client.receive's ``on_interim``)."""

    __slots__ = ("_loop", "_ident", "_rid", "_msg")

    def __init__(self, loop, ident, rid, msg):
        self._loop, self._ident, self._rid, self._msg = loop, ident, rid, msg

    def __call__(self, reply):
        if isinstance(reply, BaseException):
            if not isinstance(reply, errors.OpError):
                log.error("%s: handler for %s failed", self._loop._task, self._msg.get("type"),
                          exc_info=reply)
            reply = _error_reply(self._rid, reply, self._loop._task)
        elif reply is None:
            reply = {"ok": True}
        else:
            reply.setdefault("ok", True)
        self._send(reply)

    def early(self, header):
        header["interim"] = True
        self._send(header)

    def _send(self, reply):
        loop = self._loop
        on_io_thread = threading.get_ident() == loop._io_ident
        if loop._stopping and not on_io_thread:
            return  # the loop no longer sends replies
        reply["id"] = self._rid
        streams: list = []
        try:
            frames = codec.encode(reply, same_host=self._msg.get("same_host") is True, streams=streams)
        except (TypeError, codec.HeaderTooLarge) as e:
            if isinstance(e, codec.HeaderTooLarge):
                e = errors.ResourceExhaustedError(None, None, f"reply from {loop._task}: {e}")
            streams = []
            frames = codec.encode(_error_reply(self._rid, e, loop._task))
        if on_io_thread:
            for part in codec.part_messages(streams):  # large tensors stream ahead of it
                loop._send_to(self._ident, part)
            loop._send_to(self._ident, frames)
            return
        loop.send_from_thread(self._ident, itertools.chain(codec.part_messages(streams), (frames,)))


class _LoopPoller:
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

    def poll(self, timeout_ms, router_used):
        """[(socket or descriptor, zmq-style events)], waiting up to ``timeout_ms``."""
        ready = [sock for sock in self._sockets if _has_input(sock)]
        if router_used or self._fresh:
            self._fresh = False
            if _has_input(self._router):
                ready.append(self._router)
        out = [(sock, _POLLIN) for sock in ready]
        fired = self._poll.poll(0 if out else timeout_ms)
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


class Wakeup:
    """Wakes a thread that polls ``fileno()``, from any thread: an eventfd (a pipe where
    there is none). A plain descriptor costs the poll nothing more; a ZeroMQ inproc
    socket, which did this before, cost every poll two system calls more. ``wake`` writes
    only when the poller has not been signalled since its last ``clear``."""

    def __init__(self):
        self._lock = threading.Lock()  # a write never races the close (and a reused fd)
        self._signalled = False
        if hasattr(os, "eventfd"):
            self._rfd = self._wfd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        else:
            self._rfd, self._wfd = os.pipe()
            os.set_blocking(self._rfd, False)
            os.set_blocking(self._wfd, False)

    def fileno(self) -> int:
        return self._rfd

    def wake(self):
        if self._signalled:
            return  # the poller will see the last wake-up, and what came before this one
        with self._lock:
            if self._wfd < 0:
                return
            self._signalled = True
            try:
                os.write(self._wfd, _WAKE_BYTES)
            except BlockingIOError:  # a pipe full of wake-ups: the poller is signalled
                pass

    def clear(self):
        """Called by the poller before it takes what it was woken for. The read comes
        first: while ``_signalled`` is still set no one writes, so the read cannot swallow
        a wake-up whose sender then relies on the flag (its work was queued before it
        looked at the flag, so the take that follows this sees it)."""
        try:
            os.read(self._rfd, 4096)
        except (BlockingIOError, InterruptedError):
            pass
        self._signalled = False

    def close(self):
        with self._lock:
            if self._wfd < 0:
                return
            os.close(self._rfd)
            if self._wfd != self._rfd:
                os.close(self._wfd)
            self._rfd = self._wfd = -1


_WAKE_BYTES = (1).to_bytes(8, sys.byteorder)  # an eventfd adds an 8-byte count


class TimerHandle:
    """A pending ``ServerLoop.call_later``."""

    __slots__ = ("_loop", "fn")

    def __init__(self, loop, fn):
        self._loop = loop
        self.fn = fn  # None once run or cancelled

    def cancel(self):
        """Drops the timer and what its function holds (call on the loop's I/O thread)."""
        if self.fn is not None:
            self.fn = None
            self._loop._timer_cancelled()


class HandlerPool:
    """Threads that run handlers. Lighter than ThreadPoolExecutor (no Future per call,
    which showed up at ~15% of a cross-task step). A job never waits behind a busy
    thread: submit reserves an idle thread or starts a new one (up to ``max_workers``),
    because a handler may block until another handler of the same step runs."""

    def __init__(self, max_workers, name, thread_init=None):
        self._thread_init = thread_init
        self._jobs = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._threads: list = []
        self._max = max_workers
        self._name = name

    def submit(self, fn, *args):
        with self._lock:
            if self._idle:
                self._idle -= 1
            elif len(self._threads) < self._max:
                t = threading.Thread(target=self._work, name=f"{self._name}-{len(self._threads)}",
                                     daemon=True)
                self._threads.append(t)
                t.start()
        self._jobs.put((fn, args))

    def _work(self):
        if self._thread_init is not None:
            self._thread_init()
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fn, args = job
            try:
                fn(*args)
            except Exception:  # noqa: BLE001 - handlers report their own errors
                log.exception("%s: handler failed", self._name)
            with self._lock:
                self._idle += 1

    def shutdown(self):
        for _ in self._threads:
            self._jobs.put(None)


def _ident_key(ident) -> bytes:
    """A client's name as bytes: a lane's already is; ZeroMQ's comes as a Frame."""
    return ident if type(ident) is bytes else ident.bytes


def _error_reply(rid, e, task):
    if isinstance(e, errors.OpError):
        code = e.error_code
        msg = e.message
    else:
        # A request with a missing (KeyError) or ill-typed field is malformed, not a task failure.
        code = errors.INVALID_ARGUMENT if isinstance(e, (ValueError, TypeError, KeyError)) else errors.INTERNAL
        msg = f"{type(e).__name__}: {e}"
    return {"id": rid, "ok": False, "code": code, "message": msg, "task": task}


def _unreadable_reply(frames, e, peer):
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
