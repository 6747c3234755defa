"""Reads the features of a serialized ``tf.train.Example`` straight from its wire bytes,
without building message objects: what the parsing kernels run once per record.

Packed floats become a numpy view of their bytes; int64s are varints (decoded in Python,
one loop per feature); bytes stay bytes. dtf/io/example_pb.py is the message API over
the same format, and the tests hold the two to each other.
"""
from __future__ import annotations

import numpy as np

from dtf.framework.protowire import DecodeError, decode_varint

BYTES, FLOAT, INT64 = 1, 2, 3
LEN = 2


def skip_field(wire, data, pos):
    if wire == 0:
        return decode_varint(data, pos)[1]
    size = {1: 8, 5: 4}.get(wire)
    if size is None or pos + size > len(data):
        raise DecodeError(f"Cannot skip a field with wire type {wire}")
    return pos + size


def _chunk(data, pos):
    n, pos = decode_varint(data, pos)
    end = pos + n
    if end > len(data):
        raise DecodeError("Truncated length-delimited field")
    return pos, end


def fields(data, start, end):
    """(field number, wire type, value start, value end) of each field in data[start:end];
    for a varint, start is the value itself and end the next position."""
    pos = start
    while pos < end:
        tag, pos = decode_varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if wire == LEN:
            a, b = _chunk(data, pos)
            if b > end:
                raise DecodeError("Truncated length-delimited field")
            yield number, wire, a, b
            pos = b
        elif wire == 0:
            value, nxt = decode_varint(data, pos)
            yield number, wire, value, nxt
            pos = nxt
        else:
            nxt = skip_field(wire, data, pos)
            yield number, wire, pos, nxt
            pos = nxt


def packed_int64s(data, a, b):
    """The int64s of the packed varints in data[a:b]."""
    out = []
    while a < b:
        v, a = decode_varint(data, a)
        out.append(v - (1 << 64) if v >= 1 << 63 else v)
    return out


def _feature_values(data, a, b):
    """(kind, values) of a serialized Feature; kind 0 for an empty Feature."""
    for kind, wire, fa, fb in fields(data, a, b):
        if wire != LEN or kind not in (BYTES, FLOAT, INT64):
            continue
        if kind == BYTES:
            return BYTES, [bytes(data[x:y]) for n, w, x, y in fields(data, fa, fb)
                           if n == 1 and w == LEN]
        values: list = []
        for n, w, x, y in fields(data, fa, fb):
            if n != 1:
                continue
            if kind == FLOAT:
                if w == LEN:
                    if (y - x) % 4:
                        raise DecodeError("packed floats' length is not a multiple of 4")
                    values.append(np.frombuffer(data, "<f4", (y - x) // 4, x))
                elif w == 5:
                    values.append(np.frombuffer(data, "<f4", 1, x))
            elif w == LEN:
                values.extend(packed_int64s(data, x, y))
            elif w == 0:
                values.append(x - (1 << 64) if x >= 1 << 63 else x)
        if kind == FLOAT:
            values = np.concatenate(values) if values else np.zeros(0, np.float32)
        return kind, values
    return 0, []


def example_features(data: bytes) -> dict:
    """key -> (kind, values) of every feature of a serialized Example."""
    try:
        return _example_features_fast(data)
    except _Unusual:
        return _example_features_generic(data)


def _example_features_generic(data) -> dict:
    out = {}
    for n, w, a, b in fields(data, 0, len(data)):
        if n != 1 or w != LEN:
            continue
        for fn, fw, fa, fb in fields(data, a, b):  # Features
            if fn != 1 or fw != LEN:
                continue
            key, value = "", (0, [])
            for en, ew, ea, eb in fields(data, fa, fb):  # map entry
                if en == 1 and ew == LEN:
                    key = bytes(data[ea:eb]).decode("utf-8", "replace")
                elif en == 2 and ew == LEN:
                    value = _feature_values(data, ea, eb)
            out[key] = value
    return out


class _Unusual(Exception):
    """The bytes are not laid out as TF writes Examples: take the generic path."""


def _length(data, pos, end):
    """(length, start) of the length-delimited value whose length varint is at ``pos``."""
    b = data[pos]
    if b < 0x80:
        n, pos = b, pos + 1
    elif pos + 1 < end and data[pos + 1] < 0x80:  # 128..16383 bytes: an image, a feature map
        n, pos = (b & 0x7F) | (data[pos + 1] << 7), pos + 2
    else:
        n, pos = decode_varint(data, pos)
    if pos + n > end:
        raise DecodeError("Truncated length-delimited field")
    return n, pos


_TAG_1_LEN, _TAG_2_LEN = 0x0A, 0x12
_KIND_OF_TAG = {0x0A: BYTES, 0x12: FLOAT, 0x1A: INT64}


def _example_entries_fast(data) -> list:
    """The layout TF's serializers produce, walked without generators: every tag a single
    byte, lists packed. Anything else raises _Unusual. Gives each map entry as
    ``(key, kind, ranges)``: where its values' bytes are (see _entry_values); the walk
    itself reads only the other bytes (tags, lengths, keys)."""
    entries = []
    end = len(data)
    pos = 0
    while pos < end:
        if data[pos] != _TAG_1_LEN:
            raise _Unusual
        n, pos = _length(data, pos + 1, end)
        features_end = pos + n
        while pos < features_end:
            if data[pos] != _TAG_1_LEN:
                raise _Unusual
            n, pos = _length(data, pos + 1, features_end)
            entry_end = pos + n
            key, kind, ranges = "", 0, ()
            while pos < entry_end:
                tag = data[pos]
                n, pos = _length(data, pos + 1, entry_end)
                if tag == _TAG_1_LEN:
                    key = data[pos:pos + n].decode("utf-8", "replace")
                elif tag == _TAG_2_LEN:
                    kind, ranges = _feature_ranges(data, pos, pos + n)
                else:
                    raise _Unusual
                pos += n
            entries.append((key, kind, ranges))
    return entries


def _feature_ranges(data, pos, end):
    """(kind, ranges) of a Feature: (start, end) of each bytes value, or of a packed list."""
    if pos == end:
        return 0, ()
    kind = _KIND_OF_TAG.get(data[pos])
    if kind is None:
        raise _Unusual
    n, pos = _length(data, pos + 1, end)
    list_end = pos + n
    if pos + n != end:
        raise _Unusual
    if kind == BYTES:
        ranges = []
        while pos < list_end:
            if data[pos] != _TAG_1_LEN:
                raise _Unusual
            n, pos = _length(data, pos + 1, list_end)
            ranges.append((pos, pos + n))
            pos += n
        return BYTES, tuple(ranges)
    if pos == list_end:
        return kind, ()
    if data[pos] != _TAG_1_LEN:
        raise _Unusual  # unpacked repeated values
    n, pos = _length(data, pos + 1, list_end)
    if pos + n != list_end:
        raise _Unusual
    if kind == FLOAT and n % 4:
        raise DecodeError("packed floats' length is not a multiple of 4")
    return kind, ((pos, pos + n),)


def _entry_values(data, kind, ranges):
    """(kind, values) of a feature from the ranges _feature_ranges found."""
    if kind == BYTES:
        return BYTES, [data[a:b] for a, b in ranges]
    if kind == FLOAT:
        if not ranges:
            return FLOAT, np.zeros(0, np.float32)
        ((a, b),) = ranges
        return FLOAT, np.frombuffer(data, "<f4", (b - a) // 4, a)
    if kind == INT64:
        if not ranges:
            return INT64, []
        ((a, b),) = ranges
        return INT64, packed_int64s(data, a, b)
    return 0, []


def _example_features_fast(data) -> dict:
    """What example_features gives, for records laid out as TF writes them (else _Unusual)."""
    out = {}
    for key, kind, ranges in _entries(data):
        out[key] = _entry_values(data, kind, ranges)
    return out


def example_entries(data: bytes):
    """``(key, kind, ranges)`` of each map entry of a serialized Example (see
    _feature_ranges; _entry_values makes the values), or None when its layout is not the
    one TF's serializers write (example_features then reads it the generic way). Records
    of one layout give the same object, so a kernel may work out once what it takes from
    them."""
    try:
        return _entries(data)
    except _Unusual:
        return None


def _entries(data):
    """Records of one input mostly share their layout: the same keys, kinds and value
    counts at the same offsets, only the values differ. The layout of a record (its bytes
    outside the values, keyed by its length) is kept, and a record whose length and bytes
    outside those ranges are the same has the same entries at the same places, since the
    walk reads nothing else: they are taken from there without walking (a third of a
    queue-runner step's parse)."""
    layout = _LAYOUTS.get(len(data)) if isinstance(data, bytes) else None
    if layout is not None:
        skeleton, entries = layout
        for at, part in skeleton:  # a loop, not all(): no generator frame
            if not data.startswith(part, at):
                break
        else:
            return entries
    entries = tuple(_example_entries_fast(data))
    if len(_LAYOUTS) >= _MAX_LAYOUTS:
        _LAYOUTS.clear()
    _LAYOUTS[len(data)] = (_skeleton(data, entries), entries)
    return entries


# record length -> (skeleton, entries) of the last record of that length read the fast way
_LAYOUTS: dict = {}
_MAX_LAYOUTS = 64


def _skeleton(data, entries):
    """((offset, bytes), ...): the record's bytes outside its values' ranges."""
    parts, at = [], 0
    for a, b in sorted(r for _, _, ranges in entries for r in ranges):
        if a > at:
            parts.append((at, bytes(data[at:a])))
        at = b
    if at < len(data):
        parts.append((at, bytes(data[at:])))
    return tuple(parts)
