"""Wire encoding: one JSON header frame plus raw frames for the tensors.

Nothing received is unpickled or evaluated. The header is JSON (UTF-8); inside it, a
tensor is a reference ``{"@t": i, "dtype": name, "shape": [...]}`` to data frame ``i``, or
``{..., "at": offset}`` for a small tensor that shares frame ``i`` with the others of its
message; DTypes are ``{"@d": name}``; bytes are ``{"@b": base64}``. Numeric tensors travel
as their raw little-endian buffer (C order); large ones are sent without copies.
String tensors travel as one frame of concatenated bytes plus their lengths in the header.

See docs/protocol.md for the message catalogue.
"""
from __future__ import annotations

import base64
import itertools
import json
import re
import sys
import threading
import time

import numpy as np

from dtf.framework import dtypes
from . import shm

PROTOCOL_VERSION = 2
CHUNK_BYTES = 4 << 20
# Headers are JSON, parsed while holding the interpreter: a task takes no larger one (a
# graph of ~80,000 ops; parsing it took ~0.2 s here), so that no peer holds up its I/O
# thread for long. Every other frame a dtf sender makes is at most CHUNK_BYTES.
MAX_HEADER_BYTES = 16 << 20
# Tensors from this size on travel as a stream of Part messages ahead of their message (over
# TCP; same-host peers use shared memory): the receiver copies each part into place while
# the next one is on the wire, instead of joining all chunks after the last one arrived.
STREAM_MIN_BYTES = 2 * CHUNK_BYTES
# Numeric tensors under this size share one frame of their message (a pack, at most
# CHUNK_BYTES), each at an offset aligned to PACK_ALIGN (the largest itemsize, so views are
# aligned as a frame of their own would be). Every frame costs pyzmq and ZeroMQ a few
# microseconds to send and to receive, while pyzmq copies frames this small anyway (its
# copy threshold): encoding and sending the W5 MLP's four gradients took 29 us of CPU as
# five frames against 13 us as two.
PACK_MAX_BYTES = 64 << 10
PACK_ALIGN = 16
_PADDING = bytes(PACK_ALIGN)
_stream_ids = itertools.count(1)


class WireError(ValueError):
    """A malformed, truncated or oversized message."""


class HeaderTooLarge(WireError):
    """A message whose header is over MAX_HEADER_BYTES, refused before it is sent."""


_NP_BY_NAME = {d.name: np.dtype(d.as_numpy_dtype) for d in dtypes.ALL if d.name != "string"}
# numpy dtype -> wire name; a dict hit is several times cheaper than dtypes.as_dtype.
_NAME_BY_NP = {npd: name for name, npd in _NP_BY_NAME.items()}


def encode(header: dict, same_host: bool = False, streams: list | None = None) -> list:
    """Encodes a message (dict with plain data, DTypes, bytes and numpy arrays) into frames.
    JSON's C encoder walks the message; only arrays, dtypes and bytes reach Python.
    ``same_host``: the peer shares this host, so large tensors go through shared memory
    (``{"@s": notice}``, see dtf.wire.shm) instead of the socket. ``streams``: a list to
    which numeric tensors of STREAM_MIN_BYTES or more are appended as (stream id, bytes)
    instead of framed (``{"@r": id}``); the caller sends them first (``part_messages``)."""
    return _thread_codec().encode(header, same_host, streams)


class _ThreadCodec:
    """JSON's C encoder and decoder built once per thread around this thread's message
    context (json.dumps/loads with a hook build both anew on every call: about a third of
    a small message's encode or decode time). A plain object, one per thread (see
    ``_thread_codec``): its hooks read and write this context a dozen times per tensor,
    and each access to a threading.local costs twice a plain attribute's."""

    def __init__(self):
        self.frames = None
        self.same_host = False
        self.streams = None
        self.partials = None
        self.pack = None  # parts of the pack being filled (arrays and padding), or None
        self.pack_frame = 0  # its index in ``frames``
        self.pack_bytes = 0
        self._iterencode = json.encoder.c_make_encoder(
            None, self._special_out, json.encoder.encode_basestring_ascii, None, ":", ",",
            False, False, True) if json.encoder.c_make_encoder is not None else None
        self._slow_encoder = json.JSONEncoder(separators=(",", ":"), default=self._special_out,
                                              check_circular=False)
        self._hooked = json.JSONDecoder(object_hook=self._special_in)
        self._scan_hooked = self._hooked.scan_once

    def encode(self, header, same_host, streams) -> list:
        frames: list = [b""]
        self.frames, self.same_host, self.streams = frames, same_host, streams
        try:
            if self._iterencode is not None:
                text = "".join(self._iterencode(header, 0))
            else:
                text = self._slow_encoder.encode(header)
            self._close_pack()
        finally:
            self.frames = self.streams = self.pack = None
        head = frames[0] = text.encode()
        if len(head) > MAX_HEADER_BYTES:
            raise HeaderTooLarge(f"header of {len(head)} bytes exceeds the limit of "
                                 f"{MAX_HEADER_BYTES} bytes (tensors travel in frames of their "
                                 "own: this header holds too much else, e.g. a graph of too "
                                 "many ops)")
        return frames

    def _special_out(self, obj):
        if isinstance(obj, np.ndarray):
            if obj.nbytes < PACK_MAX_BYTES:
                ref = self._packed(obj)
                if ref is not None:
                    return ref
            if self.same_host and obj.nbytes >= shm.MIN_BYTES and shm.worth_it(obj):
                return {"@s": shm.put(obj)}
            if self.streams is not None and obj.nbytes >= STREAM_MIN_BYTES:
                ref = _stream_tensor(obj, self.streams)
                if ref is not None:
                    return ref
            return _pack_tensor(obj, self.frames)
        if isinstance(obj, dtypes.DType):
            return {"@d": obj.name}
        if isinstance(obj, (bytes, bytearray, memoryview)):
            return {"@b": base64.b64encode(bytes(obj)).decode()}
        if isinstance(obj, np.generic):
            return self._special_out(np.asarray(obj))
        raise TypeError(f"cannot put a {type(obj).__name__} on the wire")

    def _packed(self, arr):
        """``arr`` appended to this message's pack (a new one when none is open or it is
        full): its reference ``{"@t": frame, "dtype", "shape", "at": offset}``. None for
        what keeps a frame of its own: strings, odd byte orders, empty tensors."""
        name = _NAME_BY_NP.get(arr.dtype)
        nbytes = arr.nbytes
        if name is None or not nbytes:
            return None
        if not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)
        offset = self.pack_bytes + -self.pack_bytes % PACK_ALIGN
        if self.pack is not None and offset + nbytes > CHUNK_BYTES:
            self._close_pack()
        if self.pack is None:
            self.pack, self.pack_frame, offset = [], len(self.frames), 0
            self.frames.append(b"")
        elif offset > self.pack_bytes:
            self.pack.append(_PADDING[:offset - self.pack_bytes])
        self.pack.append(arr)  # bytes.join takes any C-contiguous buffer
        self.pack_bytes = offset + nbytes
        return {"@t": self.pack_frame, "dtype": name, "shape": list(arr.shape), "at": offset}

    def _close_pack(self):
        parts = self.pack
        if parts is not None:
            self.frames[self.pack_frame] = (memoryview(parts[0]).cast("B") if len(parts) == 1
                                            else b"".join(parts))
            self.pack, self.pack_bytes = None, 0

    def decode_hooked(self, text, frames, partials):
        self.frames, self.partials = frames, partials
        try:
            return _scan_whole(self._scan_hooked, self._hooked, text)
        finally:
            self.frames = self.partials = None

    def _special_in(self, obj):
        # Called by JSON's C decoder for every object, innermost first.
        if "@t" in obj:
            return _unpack_tensor(obj, self.frames)
        if "@r" in obj:
            if self.partials is None:
                raise WireError(f"streamed tensor {obj['@r']!r} missing: no part of it came")
            return _unpack_streamed(obj, self.partials.take(obj["@r"]))
        if "@s" in obj:
            try:
                return shm.take(obj["@s"])
            except (OSError, ValueError, TypeError, AttributeError) as e:
                raise WireError(f"shared-memory tensor unavailable: {e}") from None
        if "@d" in obj:
            try:
                return dtypes.as_dtype(obj["@d"])
            except TypeError:
                raise WireError(f"unknown dtype {obj['@d']!r}") from None
        if "@b" in obj:
            try:
                return base64.b64decode(obj["@b"], validate=True)
            except (ValueError, TypeError):
                raise WireError("bad base64 bytes") from None
        return obj


_per_thread = threading.local()


def _thread_codec() -> _ThreadCodec:
    codec = getattr(_per_thread, "codec", None)
    if codec is None:
        codec = _per_thread.codec = _ThreadCodec()
    return codec


_plain = json.JSONDecoder()
_scan_plain = _plain.scan_once
_JSON_SPACE = " \t\n\r"


def _scan_whole(scan_once, decoder, text):
    """``decoder.decode(text)`` without its two whitespace regex matches (a tenth of a small
    header's decode): our encoders write none. Text that starts with whitespace takes the
    full path; trailing whitespace is allowed, other trailing text is refused as there."""
    try:
        body, end = scan_once(text, 0)
    except StopIteration:  # no value at index 0: maybe leading whitespace; nothing was decoded
        return decoder.decode(text)
    if end != len(text) and text[end:].strip(_JSON_SPACE):
        raise json.JSONDecodeError("Extra data", text, end)
    return body


def _pack_tensor(arr: np.ndarray, frames):
    ref = {"@t": len(frames), "dtype": _NAME_BY_NP.get(arr.dtype), "shape": list(arr.shape)}
    if ref["dtype"] is None:
        if arr.dtype == object or arr.dtype.kind in "US":
            items = [v.encode() if isinstance(v, str) else bytes(v) for v in arr.reshape(-1)]
            ref["dtype"], ref["lens"] = "string", [len(i) for i in items]
            return _append_framed(frames, memoryview(b"".join(items)), ref)
        ref["dtype"] = dtypes.as_dtype(arr.dtype).name  # e.g. a non-native byte order: TypeError
    return _append_framed(frames, _raw_bytes(arr), ref)


def _raw_bytes(arr: np.ndarray):
    """A numeric array's bytes in C order, without a copy when it is contiguous."""
    if not arr.data.c_contiguous:
        arr = np.ascontiguousarray(arr)
    return memoryview(arr).cast("B") if arr.size else memoryview(b"")


def _append_framed(frames, raw, ref):
    """Appends ``raw`` as one frame, or as frames of CHUNK_BYTES with ``"n"`` in ``ref``:
    ZeroMQ moves a multipart message of 4 MiB frames about twice as fast over TCP as one
    huge frame, and every task reads frames that size (endpoints.max_frame_bytes)."""
    if len(raw) <= CHUNK_BYTES:
        frames.append(raw)
        return ref
    chunks = range(0, len(raw), CHUNK_BYTES)
    frames.extend(raw[i:i + CHUNK_BYTES] for i in chunks)
    ref["n"] = len(chunks)
    return ref


def _stream_tensor(arr: np.ndarray, streams):
    name = _NAME_BY_NP.get(arr.dtype)
    if name is None:  # strings and odd byte orders keep their framed form
        return None
    sid = next(_stream_ids)
    streams.append((sid, _raw_bytes(arr)))
    return {"@r": sid, "dtype": name, "shape": list(arr.shape)}


def part_messages(streams):
    """The Part messages that carry ``streams`` (from ``encode``): each is a header frame
    and one data frame of at most CHUNK_BYTES, sent without a copy."""
    for sid, raw in streams:
        total = len(raw)
        for offset in range(0, total, CHUNK_BYTES):
            head = json.dumps({"type": "Part", "id": 0, "stream": sid, "offset": offset,
                               "total": total}, separators=(",", ":")).encode()
            yield [head, raw[offset:offset + CHUNK_BYTES]]


class _SpareBuffers:
    """Receive buffers of finished streams, reused once nothing refers to them any more:
    the page faults of a fresh 64 MiB array cost about as much as copying into it. Keeps
    the ``MAX_COUNT`` most recent (``MAX_BYTES`` in all), each for ``KEEP_S`` at most, so
    a process that stops receiving large tensors holds on to little for long."""

    MAX_COUNT = 2
    MAX_BYTES = 256 << 20
    KEEP_S = 10.0

    def __init__(self):
        self._buffers: list = []  # [(buffer, monotonic time kept)], newest first
        self._lock = threading.Lock()

    def take(self, nbytes) -> np.ndarray:
        with self._lock:
            self._expire()
            for i in range(len(self._buffers)):
                buf = self._buffers[i][0]
                # Held only by the list's tuple, ``buf`` and getrefcount's argument: every
                # array made from it (views keep their base alive) is gone.
                if len(buf) == nbytes and sys.getrefcount(buf) == 3:
                    del self._buffers[i]
                    return buf
        return np.empty(nbytes, dtype=np.uint8)

    def keep(self, buf: np.ndarray):
        if len(buf) > self.MAX_BYTES:
            return
        with self._lock:
            self._buffers.insert(0, (buf, time.monotonic()))
            while (len(self._buffers) > self.MAX_COUNT
                   or sum(len(b) for b, _ in self._buffers) > self.MAX_BYTES):
                self._buffers.pop()
            self._expire()

    def _expire(self):
        cutoff = time.monotonic() - self.KEEP_S
        while self._buffers and self._buffers[-1][1] < cutoff:
            self._buffers.pop()


_spares = _SpareBuffers()


class StreamTooLarge(WireError):
    """A streamed message over the receiver's size limit."""


class PartialStreams:
    """The streams one sender has in flight to this receiver: ``add`` copies a Part into
    place; ``take`` (used by ``decode`` for ``{"@r": id}``) hands over a complete one.
    Parts of one stream arrive in order (one socket), so a stream is a buffer and a count.
    A stream over ``max_bytes``, or over what is left of ``budget`` (all senders' streams
    together), is not stored: its message is refused (StreamTooLarge). ``close`` gives
    back to ``budget`` what streams never taken held."""

    def __init__(self, max_bytes: int | None = None, budget=None):
        self._max_bytes = max_bytes
        self._budget = budget  # the task's limits.InflightBudget, for all its senders
        self._streams: dict = {}  # id -> [uint8 array, bytes received]
        self._refused: dict = {}  # id -> its declared size
        self._refuse_rest = 0  # a Part was refused before it could be read: the size seen
        self.touched = 0.0  # monotonic time of the last part, for sweeping abandoned ones

    def refuse_rest(self, size: int):
        """A message from this sender was too large to read (maybe a Part): the streams
        its next message names are refused as too large."""
        self._refuse_rest = size

    def held_bytes(self) -> int:
        return sum(len(buf) for buf, _ in self._streams.values())

    def add(self, head: dict, frame):
        sid, offset, total = head.get("stream"), head.get("offset"), head.get("total")
        if type(sid) is not int or type(offset) is not int or type(total) is not int or total <= 0:
            raise WireError("malformed Part message")
        if sid in self._refused:
            return
        data = np.frombuffer(_buffer(frame), dtype=np.uint8)
        entry = self._streams.get(sid)
        if entry is None:
            if offset != 0:
                raise WireError(f"Part of stream {sid} at offset {offset} without its start")
            if (self._max_bytes is not None and total + self.held_bytes() > self._max_bytes
                    or self._budget is not None and not self._budget.reserve(total)):
                self._refused[sid] = total
                return
            entry = self._streams[sid] = [_spares.take(total), 0]
        buf, got = entry
        if offset != got or len(buf) != total or got + len(data) > total or not len(data):
            self._drop(sid)
            raise WireError(f"Part of stream {sid} out of order (offset {offset}, expected {got} "
                            f"of {len(buf)})")
        buf[got:got + len(data)] = data
        entry[1] = got + len(data)

    def take(self, sid):
        if type(sid) is int and sid in self._refused:
            raise StreamTooLarge(f"message of at least {self._refused[sid]} bytes exceeds the "
                                 f"limit of {self._max_bytes} bytes")
        if self._refuse_rest and sid not in self._streams:
            raise StreamTooLarge(f"message with a part of {self._refuse_rest} bytes exceeds the "
                                 f"limit of {self._max_bytes} bytes")
        entry = self._drop(sid) if type(sid) is int else None
        if entry is None or entry[1] != len(entry[0]):
            raise WireError(f"streamed tensor {sid!r} missing or incomplete")
        _spares.keep(entry[0])
        return entry[0]

    def _drop(self, sid):
        entry = self._streams.pop(sid, None)
        if entry is not None and self._budget is not None:
            self._budget.release(len(entry[0]))
        return entry

    def close(self):
        """Drops the streams still held (their message never came, or failed)."""
        for sid in list(self._streams):
            self._drop(sid)

    def __bool__(self):
        return bool(self._streams or self._refused or self._refuse_rest)


def decode(frames, max_message_bytes: int | None = None, streams: PartialStreams | None = None) -> dict:
    """Decodes frames (bytes or zmq.Frame) into a message dict; WireError on bad input.
    ``streams``: where the sender's streamed tensors (``{"@r": id}``) were assembled."""
    if not frames:
        raise WireError("empty message")
    head = _buffer(frames[0])
    if len(head) > MAX_HEADER_BYTES:
        raise WireError(f"header of {len(head)} bytes exceeds the limit of {MAX_HEADER_BYTES}")
    if max_message_bytes is not None:
        total = sum(len(_buffer(f)) for f in frames)
        if total > max_message_bytes:
            raise WireError(f"message of {total} bytes exceeds the limit of {max_message_bytes}")
    # Only a header holding "@" (tensors, dtypes, bytes) or a \u escape (which could spell
    # one) needs the per-object hook; a plain request decodes entirely in C. (Searching the
    # str is several times cheaper than searching the bytes.)
    try:
        text = str(head, "utf-8")
        if "@" in text or "\\u" in text:
            body = _thread_codec().decode_hooked(text, frames, streams)
        else:
            body = _scan_whole(_scan_plain, _plain, text)
    except (UnicodeDecodeError, ValueError) as e:
        if isinstance(e, WireError):
            raise
        raise WireError(f"header is not valid JSON: {e}") from None
    except RecursionError:
        raise WireError("message nesting too deep") from None
    if not isinstance(body, dict):
        raise WireError("header must be a JSON object")
    return body


# A refused message's header is read whole only up to this size (on the I/O thread); of a
# larger one only the request id is looked for, at its end, where dtf senders put it.
PEEK_MAX_BYTES = 1 << 20
_TAIL_ID = re.compile(rb',"id":(\d{1,18})\}\s*$')


def peek_header(frames):
    """The header of a message as plain JSON, its tensors left undecoded (None when
    unreadable): enough to answer or account for a message that was refused."""
    try:
        head = _buffer(frames[0])
        if len(head) > PEEK_MAX_BYTES:
            found = _TAIL_ID.search(bytes(head[-32:]))
            return {"id": int(found.group(1))} if found else None
        header = json.loads(bytes(head).decode("utf-8"))
        return header if isinstance(header, dict) else None
    except (IndexError, ValueError, AttributeError, UnicodeDecodeError, RecursionError):
        return None


def peek_id(frames):
    """The request id of a message without decoding its tensors (None when unreadable), so
    that a refused message still gets a reply its sender recognises."""
    header = peek_header(frames)
    rid = header.get("id") if header is not None else None
    return rid if isinstance(rid, int) else None


def _buffer(frame):
    if isinstance(frame, (bytes, bytearray, memoryview)):
        return memoryview(frame)
    return frame.buffer  # zmq.Frame


_ndarray = np.ndarray


def _unpack_tensor(ref, frames):
    if len(ref) == 3 or len(ref) == 4 and "at" in ref:  # the common cases, checked cheaply
        fast = _unpack_numeric(ref, frames)
        if fast is not None:
            return fast
    try:
        idx = int(ref["@t"])
        dtype = ref["dtype"]
        shape = [int(d) for d in ref["shape"]]
    except (KeyError, TypeError, ValueError, OverflowError):  # OverflowError: Infinity
        raise WireError("malformed tensor reference") from None
    if not isinstance(dtype, str):
        raise WireError(f"unknown tensor dtype {dtype!r}")
    if not 0 < idx < len(frames):
        raise WireError(f"tensor frame {idx} missing (message has {len(frames)} frames)")
    if any(d < 0 for d in shape) or len(shape) > 32:
        raise WireError(f"bad tensor shape {shape}")
    n = 1
    for d in shape:
        n *= d
    parts = ref.get("n", 1)
    if not isinstance(parts, int) or parts < 1 or idx + parts > len(frames):
        raise WireError(f"tensor frames {idx}..{idx}+{parts} missing (message has {len(frames)} frames)")
    at = ref.get("at")
    if at is not None and (type(at) is not int or at < 0 or parts != 1 or dtype == "string"):
        raise WireError(f"bad tensor offset {at!r}")
    if parts > 1 and dtype != "string":
        return _join_chunks(frames[idx:idx + parts], dtype, shape, n)
    if parts > 1:
        buf = memoryview(b"".join(_buffer(f) for f in frames[idx:idx + parts]))
    else:
        buf = _buffer(frames[idx])
    if dtype == "string":
        lens = ref.get("lens")
        if not isinstance(lens, list) or len(lens) != n or any(
                not isinstance(x, int) or x < 0 for x in lens) or sum(lens) != len(buf):
            raise WireError("string tensor lengths do not match its frame")
        out = np.empty(n, dtype=object)
        raw = bytes(buf)
        pos = 0
        for i, ln in enumerate(lens):
            out[i] = raw[pos:pos + ln]
            pos += ln
        return _shaped(out, shape)
    npd = _NP_BY_NAME.get(dtype)
    if npd is None:
        raise WireError(f"unknown tensor dtype {dtype!r}")
    if at is not None:  # packed: its bytes lie at ``at`` in a frame shared with others
        if at + n * npd.itemsize > len(buf):
            raise WireError(f"tensor at offset {at} needs {n * npd.itemsize} bytes for "
                            f"{dtype}{shape}; frame {idx} has {len(buf)}")
    elif len(buf) != n * npd.itemsize:
        raise WireError(f"tensor frame has {len(buf)} bytes, expected {n * npd.itemsize} for "
                        f"{dtype}{shape}")
    if n == 0:
        return _shaped(np.zeros(0, dtype=npd), shape)
    # Zero-copy view of the received frame: kernels never mutate their inputs, and
    # variables replace (not mutate) their arrays.
    return _ndarray(shape, npd, buf, at or 0)


def _unpack_numeric(ref, frames):
    """A numeric tensor that is one frame or lies in a pack, or None to take the fully
    checked path (which also produces the error messages)."""
    idx, dtype, shape, at = ref["@t"], ref.get("dtype"), ref.get("shape"), ref.get("at")
    npd = _NP_BY_NAME.get(dtype) if type(dtype) is str else None
    if (npd is None or type(idx) is not int or type(shape) is not list or not 0 < idx < len(frames)
            or len(shape) > 32):
        return None
    buf = _buffer(frames[idx])
    # Zero-copy view of the received frame. Kernels never mutate their inputs, and variables
    # replace (not mutate) their arrays. numpy checks the shape's dims and that the buffer
    # holds them; the checked path words what it refuses.
    try:
        if at is None:
            arr = _ndarray(shape, npd, buf)
            if arr.nbytes != len(buf):
                return None
        elif type(at) is int and at >= 0:
            arr = _ndarray(shape, npd, buf, at)
        else:
            return None
    except (TypeError, ValueError, OverflowError):
        return None
    return arr if arr.size else None


def _unpack_streamed(ref, buf):
    dtype, shape = ref.get("dtype"), ref.get("shape")
    npd = _NP_BY_NAME.get(dtype) if type(dtype) is str else None
    if npd is None:
        raise WireError(f"unknown tensor dtype {dtype!r}")
    if type(shape) is not list or len(shape) > 32 or any(type(d) is not int or d < 0 for d in shape):
        raise WireError(f"bad tensor shape {shape}")
    n = 1
    for d in shape:
        n *= d
    if len(buf) != n * npd.itemsize:
        raise WireError(f"streamed tensor has {len(buf)} bytes, expected {n * npd.itemsize} "
                        f"for {dtype}{shape}")
    return buf.view(npd).reshape(shape)


def _join_chunks(chunk_frames, dtype, shape, n):
    """A numeric tensor sent as several frames, copied once into one array."""
    npd = _NP_BY_NAME.get(dtype)
    if npd is None:
        raise WireError(f"unknown tensor dtype {dtype!r}")
    bufs = [_buffer(f) for f in chunk_frames]
    if sum(len(b) for b in bufs) != n * npd.itemsize:
        raise WireError(f"tensor frames hold {sum(len(b) for b in bufs)} bytes, expected "
                        f"{n * npd.itemsize} for {dtype}{shape}")
    out = np.empty(n * npd.itemsize, dtype=np.uint8)
    pos = 0
    for b in bufs:
        out[pos:pos + len(b)] = np.frombuffer(b, dtype=np.uint8)
        pos += len(b)
    return out.view(npd).reshape(shape)


def _shaped(flat: np.ndarray, shape) -> np.ndarray:
    """``flat`` reshaped; an empty tensor may still declare dims numpy cannot represent."""
    try:
        return flat.reshape(shape)
    except (ValueError, OverflowError):
        raise WireError(f"bad tensor shape {shape}") from None
