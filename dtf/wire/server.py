"""The server side of the transport: ``ServerLoop``, one I/O thread serving a task's
ROUTER socket and lanes, with handlers on a pool (dtf.wire.primitives)."""
from __future__ import annotations

import collections
import itertools
import logging
import os
import threading
import time

import zmq

from dtf.framework import errors
from . import codec, flood as _flood, lane as _lane, limits, security as _security
from .client import Client, error_reply, unreadable_reply
from .endpoints import (ALL_INTERFACES, LOOPBACK_HOSTS, bind_endpoints, loopback_port,
                        max_frame_bytes, wait_released)
from .frames import LoopPoller, context, readable, recv_frames, send_frames
from .primitives import HandlerPool, Timers, Wakeup

log = logging.getLogger("dtf.wire")

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

_POLLIN, _POLLOUT = int(zmq.POLLIN), int(zmq.POLLOUT)
_Lane = _lane.Lane
_Oversized = _lane.Oversized
_LANE_IDENT = _lane.IDENT_PREFIX


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
        self._timers = Timers()
        # ``call_later(delay_s, fn) -> TimerHandle``: runs ``fn()`` on the I/O thread after
        # ``delay_s`` (call from the I/O thread; so is the handle's ``cancel()``). Bound
        # here, not wrapped: no frame of the loop's own between callers and the timers.
        self.call_later = self._timers.call_later
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
        port = loopback_port(address, LOOPBACK_HOSTS | ALL_INTERFACES)
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
        heap = self._timers.heap  # asked inline: this runs every pass, a timer is rarely due
        if heap and heap[0][0] <= time.monotonic():
            self._timers.pop_due(self._soon.append)
        self._run_soon()

    def _poll_ms(self):
        if self._soon:
            return 0
        heap = self._timers.heap  # read inline: this runs every pass
        if not heap:
            return 1000
        return max(0, min(1000, int((heap[0][0] - time.monotonic()) * 1000) + 1))

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
            reply = unreadable_reply(frames, e, self._task)
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
                poller = LoopPoller(watched, self._router)
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
                reply = error_reply(rid, e, self._task)
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
            self._send_now(ident, error_reply(rid, errors.UnimplementedError(
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
        self._send_now(ident, error_reply(rid if isinstance(rid, int) else None, error, self._task))
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
        wait_released(self._endpoints)

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
            reply = error_reply(self._rid, reply, self._loop._task)
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
            frames = codec.encode(error_reply(self._rid, e, loop._task))
        if on_io_thread:
            for part in codec.part_messages(streams):  # large tensors stream ahead of it
                loop._send_to(self._ident, part)
            loop._send_to(self._ident, frames)
            return
        loop.send_from_thread(self._ident, itertools.chain(codec.part_messages(streams), (frames,)))



def _ident_key(ident) -> bytes:
    """A client's name as bytes: a lane's already is; ZeroMQ's comes as a Frame."""
    return ident if type(ident) is bytes else ident.bytes


