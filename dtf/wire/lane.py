"""Same-host lane: a task's messages over a plain Unix stream socket, past ZeroMQ.

Why: ZeroMQ hands every message to its I/O thread on both sides, so one message costs the
sender's and the receiver's background threads a wake-up each besides the receiver's own.
On this project's 2-core machines a chain of four messages between three processes (the
shape of a cross-task step: client -> master -> worker -> master -> client) took 130-160
us through ZeroMQ and 35-37 us through Unix sockets written and read by the threads that
use them. Tasks whose address is on this host's loopback therefore also listen on an
abstract Unix socket (Linux; DTF_IPC=0 turns it off) under a random name, which clients
without cluster keys learn from the task over TCP (endpoints.connect_lane) and use when
the process behind it is the one that named it. ZeroMQ stays the transport between hosts
and whenever the cluster's keys are in use (the lane has no encryption).

Wire format, per message: the frame count (u32), each frame's length (u64), then the
frames' bytes, all little-endian. A receiver closes the connection on a count of zero or
over MAX_FRAMES. A message over its byte limit is not held: its first frame (the header,
when at most HEADER_KEEP bytes) is passed on with an ``Oversized`` frame standing for the
rest, which is read and dropped, so the server can answer with an error naming the limit.

A lane is owned by one thread. Its socket never blocks: ``send`` either waits for room
(``blocking``, reading what arrives meanwhile, so two lanes writing to each other cannot
stall) or queues the rest for ``flush`` when the socket is writable (a server's I/O
thread, which must not wait on one peer).
"""
from __future__ import annotations

import collections
import itertools
import math
import mmap
import secrets
import select
import socket
import struct
import time

import numpy as np

from . import limits
from .spin import spin

_COUNT = struct.Struct("<I")
MAX_FRAMES = 1 << 16
# Messages read whole into a fresh buffer of their own from this size on (no copy out of
# the read buffer); smaller ones are read in chunks of READ_BYTES and copied out.
READ_BYTES = 64 << 10
_IOV_MAX = 512  # buffers per sendmsg (Linux allows 1024)
HEADER_KEEP = 1 << 20
_idents = itertools.count(1)
# A server names an accepted lane in its replies by IDENT_PREFIX + a number: ZeroMQ's own
# identities start with a zero byte, so the first byte tells the two apart.
IDENT_PREFIX = b"\xff"


_FEW = 8  # frame counts whose length struct is made once (the hot paths index it inline)
_LENGTHS = [struct.Struct(f"<{n}Q") for n in range(_FEW)]


def _lengths(count) -> struct.Struct:
    return _LENGTHS[count] if count < len(_LENGTHS) else struct.Struct(f"<{count}Q")


class LaneError(OSError):
    """A malformed message: the connection was closed."""


class Oversized:
    """Stands for the frames of a message over the receiver's limit, dropped unread: only
    their length is known. ``over_budget``: the message itself was within the limit, but
    the task's budget for messages in flight (limits.InflightBudget) was spent."""

    __slots__ = ("nbytes", "over_budget")

    def __init__(self, nbytes, over_budget=False):
        self.nbytes = nbytes
        self.over_budget = over_budget

    def __len__(self):
        return self.nbytes


NAME_PREFIX = "dtf-lane-"


def new_name(port) -> str:
    """A fresh abstract name for the lane of the task at port ``port``: random, so that no
    one can take it before the task binds it (abstract names carry no permissions)."""
    return f"{NAME_PREFIX}{port}-{secrets.token_hex(16)}"


def listen(name: str) -> socket.socket | None:
    """A listening socket at abstract name ``name``, or None when it cannot be had."""
    global _spare
    if _spare is None:  # made while descriptors are still to be had
        _spare = limits.SpareDescriptor()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind("\0" + name)
        sock.listen(128)
    except OSError:
        sock.close()
        return None
    sock.setblocking(False)
    return sock


def peer_pid(sock) -> int:
    """The process id behind a connected Unix socket (SO_PEERCRED), -1 if unknown."""
    try:
        return struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
    except (OSError, AttributeError):
        return -1


def connect(name: str, pid: int, blocking: bool = True) -> "Lane | None":
    """A lane to the task listening at ``name``, or None when none listens there or the
    listener is not process ``pid`` (another process took the name after the task left)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect("\0" + name)
    except OSError:
        sock.close()
        return None
    if peer_pid(sock) != pid:
        sock.close()
        return None
    return Lane(sock, blocking=blocking)


_spare = None  # a descriptor kept to shed connections when none is left (made on first need)


def accept(listener: socket.socket, max_bytes: int, shared_chunk=None, budget=None) -> list:
    """The connections waiting on ``listener``, as lanes that queue what they send. Out of
    descriptors, waiting connections are closed (their clients use TCP), so the listener
    does not stay readable. ``shared_chunk``: the read buffer of the thread that fills
    them all (a server's I/O thread); ``budget``: the task's limits.InflightBudget."""
    out = []
    while True:
        try:
            sock, _ = listener.accept()
        except (BlockingIOError, InterruptedError):
            return out
        except OSError as e:
            if not limits.out_of_descriptors(e):
                return out
            if _spare is None or not _spare.shed(listener):
                return out
            continue
        out.append(Lane(sock, blocking=False, max_bytes=max_bytes,
                        ident=IDENT_PREFIX + next(_idents).to_bytes(8, "little"),
                        chunk=shared_chunk, budget=budget))


class Lane:
    """One connection. ``ident``: how a server names it in its replies (bytes that no
    ZeroMQ identity starts with). ``max_bytes``: the largest message it reads (None: no
    limit, for replies from the tasks a client chose to call). ``chunk``: a read buffer of
    READ_BYTES shared with the other lanes its thread fills (a server's lanes), so that
    thousands of idle connections hold no buffer each. ``budget``: a limits.InflightBudget
    that a large message being received takes its size from (refused when spent)."""

    def __init__(self, sock, blocking=True, max_bytes=None, ident=b"", chunk=None, budget=None):
        sock.setblocking(False)
        self.sock = sock
        self.fd = sock.fileno()
        self.ident = ident
        self.blocking = blocking
        self.eof = False  # the peer closed the connection or broke the protocol
        self.ready = collections.deque()  # complete messages (lists of frames) not yet taken
        self._max_bytes = max_bytes
        self._in = bytearray()
        self._chunk = bytearray(READ_BYTES) if chunk is None else chunk
        self._big = None  # (buffer, frame lengths) of a large message being read whole
        self._big_fill = 0
        self._budget = budget
        self._reserved = 0  # what the large message being read took from the budget
        self._skip = 0  # bytes of an oversized message still to read and drop
        self._poller = None  # for waiting to read
        self._out = collections.deque()  # buffers not yet written (queueing lanes)
        self.on_blocked = None  # fn(lane) when a queueing lane is left with bytes to write

    def fileno(self):
        return self.fd

    @property
    def pending(self) -> bool:
        """Bytes wait to be written (``flush`` when the socket is writable)."""
        return bool(self._out)

    # -- sending ---------------------------------------------------------------------
    def send(self, frames):
        if self.eof:
            return  # as ZeroMQ does for a peer that is gone: the caller's wait finds out
        bufs = [f if type(f) is bytes else memoryview(f).cast("B") for f in frames]
        count = len(bufs)
        head = _COUNT.pack(count) + (_LENGTHS[count] if count < _FEW else _lengths(count)).pack(
            *map(len, bufs))
        bufs.insert(0, head)
        if not self._out and count < _IOV_MAX:  # the usual case: the socket takes it all
            try:
                sent = self.sock.sendmsg(bufs)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                self._lost()
                return
            if sent == len(head) + sum(map(len, bufs[1:])):
                return
            self._queue(bufs, sent)
        else:
            self._queue(bufs, 0)
            self.flush()
        while self._out and self.blocking and not self.eof:
            self._wait_writable()
            self.flush()
        if self._out and self.on_blocked is not None:
            self.on_blocked(self)

    def _queue(self, bufs, sent):
        """Keeps ``bufs`` from byte ``sent`` on for writing later."""
        for buf in bufs:
            n = len(buf)
            if sent >= n:
                sent -= n
                continue
            self._out.append(memoryview(buf)[sent:] if sent else memoryview(buf))
            sent = 0

    def flush(self):
        """Writes what the socket takes now."""
        out = self._out
        while out:
            bufs = list(itertools.islice(out, _IOV_MAX))
            try:
                sent = self.sock.sendmsg(bufs)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self._lost()
                return
            for buf in bufs:
                if sent >= len(buf):
                    sent -= len(buf)
                    out.popleft()
                else:
                    out[0] = buf[sent:]
                    return

    # -- receiving -------------------------------------------------------------------
    def wait_readable(self, timeout_ms) -> bool:
        """Whether a message can be taken, waiting up to ``timeout_ms`` (-1: no limit)."""
        if self.ready:
            return True
        if self.eof:
            # A peer gone is found out by the caller's liveness checks, as with ZeroMQ
            # (which waits for a reconnection): wait out the slice instead of spinning.
            if timeout_ms != 0:
                time.sleep(0.5 if timeout_ms < 0 else timeout_ms / 1000)
            return False
        if timeout_ms == 0:
            self.fill()
            return bool(self.ready)
        deadline = None if timeout_ms < 0 else time.monotonic() + timeout_ms / 1000
        while not self.ready and not self.eof:  # a poll first: a read now would mostly find nothing
            wait = -1 if deadline is None else math.ceil((deadline - time.monotonic()) * 1000)
            if deadline is not None and wait <= 0 or not self._wait_in(wait):
                break
            self.fill()  # a whole message, or part of one: then wait for the rest
        return bool(self.ready)

    def _wait_in(self, timeout_ms) -> bool:
        if self._poller is None:
            self._poller = select.poll()
            self._poller.register(self.fd, select.POLLIN)
        if timeout_ms and spin(self._poll_now):
            return True
        return bool(self._poller.poll(None if timeout_ms < 0 else timeout_ms))

    def _poll_now(self):
        return self._poller.poll(0)

    def take(self) -> list:
        return self.ready.popleft()

    def fill(self):
        """Reads what the socket holds now; complete messages go to ``ready``."""
        while not self.eof:
            try:
                if self._skip:
                    n = self.sock.recv_into(self._chunk, min(self._skip, READ_BYTES))
                elif self._big is not None:
                    buf, _ = self._big
                    n = self.sock.recv_into(memoryview(buf)[self._big_fill:])
                else:
                    n = self.sock.recv_into(self._chunk)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self._lost()
                return
            if n == 0:
                self._lost()
                return
            if self._skip:
                self._skip -= n
                continue
            if self._big is not None:
                self._big_fill += n
                if self._big_fill == len(self._big[0]):
                    buf, lens = self._big
                    self._big = None
                    self._release()
                    view, frames, pos = memoryview(buf), [], 0
                    for ln in lens:
                        frames.append(view[pos:pos + ln])
                        pos += ln
                    self.ready.append(frames)
                continue
            # Parse straight from the read buffer unless a partial message came before.
            kept = self._in
            if kept:
                kept += memoryview(self._chunk)[:n]
            try:
                if kept:
                    del kept[:self._parse(kept, len(kept))]
                else:
                    used = self._parse(self._chunk, n)
                    if used < n:
                        kept += memoryview(self._chunk)[used:n]
            except LaneError:
                self._lost()
                return
            if n < READ_BYTES and self._big is None and not self._skip:
                return  # the socket had no more (saves a read that would find nothing)

    def _parse(self, buf, end) -> int:
        """Takes the messages in ``buf[:end]``; returns how many bytes they used."""
        pos = 0
        with memoryview(buf) as view:
            while end - pos >= 4:
                (count,) = _COUNT.unpack_from(buf, pos)
                if not 0 < count <= MAX_FRAMES:
                    raise LaneError(f"message of {count} frames")
                head = 4 + 8 * count
                if end - pos < head:
                    break
                lens = (_LENGTHS[count] if count < _FEW else _lengths(count)).unpack_from(buf, pos + 4)
                total = sum(lens)
                start = pos + head
                over_limit = self._max_bytes is not None and total > self._max_bytes
                if over_limit or (end - start < total and total >= READ_BYTES
                                  and not self._reserve(total)):
                    if lens[0] > HEADER_KEEP:
                        raise LaneError(f"oversized message with a {lens[0]}-byte header")
                    if end - start < lens[0]:
                        break
                    rest = total - lens[0]
                    self.ready.append([bytes(view[start:start + lens[0]]),
                                       Oversized(rest, over_budget=not over_limit)])
                    dropped = min(rest, end - start - lens[0])
                    self._skip = rest - dropped
                    pos = start + lens[0] + dropped
                    continue
                if end - start < total:
                    if total >= READ_BYTES:  # read the rest straight into its own buffer
                        big = _message_buffer(total)
                        if big is None:  # ZeroMQ too drops such a peer
                            self._release()
                            raise LaneError(f"no memory for a message of {total} bytes")
                        have = end - start
                        memoryview(big)[:have] = view[start:end]
                        self._big, self._big_fill = (big, lens), have
                        pos = end
                    break
                frames = []
                for ln in lens:
                    frames.append(buf[start:start + ln])  # a copy: the buffer is reused
                    start += ln
                self.ready.append(frames)
                pos = start
        return pos

    # -- both ------------------------------------------------------------------------
    def _wait_writable(self):
        """Waits for room to write, reading what arrives meanwhile (into ``ready``)."""
        poller = select.poll()
        poller.register(self.fd, select.POLLOUT | select.POLLIN)
        for _, events in poller.poll():
            if events & (select.POLLIN | select.POLLHUP | select.POLLERR):
                self.fill()

    def _reserve(self, nbytes) -> bool:
        if self._budget is None:
            return True
        if self._reserved or not self._budget.reserve(nbytes):
            return False
        self._reserved = nbytes
        return True

    def _release(self):
        if self._reserved:
            self._budget.release(self._reserved)
            self._reserved = 0

    def _lost(self):
        self.eof = True
        self._out.clear()
        self._big = None
        self._release()

    def close(self, linger=None):
        self.eof = True
        self._out.clear()
        self._big = None
        self._release()
        self.sock.close()


# Messages up to this size are read into heap memory; larger ones into a mapping of their
# own. Why: a fresh anonymous mapping is paid again on every message, once to make (12 us
# for 91 KB here) and once per page as the read writes it (about 100 us for 91 KB, 1.8 ms
# for 2 MiB), against 3-4 us (91 KB) and 64 us (2 MiB) for memory the allocator reuses. A
# word2vec step reads three such messages (gathered rows, gradients). Not up to a stream's
# 4 MiB chunks: W3's 16 and 64 MiB transfers were slower in 0 of 6 paired rounds that way
# (numpy asks for huge pages from 4 MiB, and the allocator maps such sizes afresh anyway).
HEAP_BYTES = 1 << 20


def _message_buffer(nbytes):
    """A writable buffer of ``nbytes`` for one message, not zeroed (only what the peer
    wrote is ever passed on), or None. Past HEAP_BYTES it is an anonymous mapping, whose
    memory is taken only as it is written: a peer that declares a large message and sends
    little of it costs the task address space, bounded by its budget, not memory."""
    try:
        if nbytes <= HEAP_BYTES:
            return np.empty(nbytes, np.uint8)
        return mmap.mmap(-1, nbytes)
    except (MemoryError, OSError, OverflowError, ValueError):
        return None
