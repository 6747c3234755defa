"""Protocol-buffer wire format by hand: varints, field keys, and a table-driven Message.

TF's file formats (event files, GraphDef, MetaGraphDef, checkpoint index entries, ...)
are protobuf messages. dtf writes and reads the few it needs without the protobuf runtime:
each message lists its fields (TF's numbers and types) in a table, and one generic codec
serializes and parses them all, so the bytes are those of TF's generated classes.

The Python surface follows the protobuf API TF1 programs use: keyword constructors,
attribute access with proto3 defaults, ``repeated.add(...)``, map fields as dicts
(``node.attr["T"].type = 1``), ``HasField``, ``WhichOneof``, ``SerializeToString``,
``FromString``, ``ParseFromString``, ``CopyFrom``, ``MergeFrom``. Unknown fields are
skipped when parsing, as protobuf does. Repeated numeric fields marked ``packed`` are
written packed (proto3's default) and read either way. The text format (``str(msg)``)
is dtf/framework/prototext.py.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

VARINT, I64, LEN, I32 = 0, 1, 2, 5


class DecodeError(ValueError):
    """Malformed protobuf bytes (google.protobuf.message.DecodeError's role)."""


@dataclass(frozen=True)
class Field:
    number: int
    name: str
    # double | float | int64 | int32 | uint64 | enum | bool | fixed32 | string | bytes |
    # message | map (message = the entry class, with fields key=1 and value=2)
    kind: str
    message: type | None = None
    repeated: bool = False
    oneof: str | None = None
    packed: bool = False
    enum_names: dict | None = None  # enum fields: {name: number}, for the text format


# -- wire primitives ----------------------------------------------------------------------
def encode_varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negatives are 10-byte two's complement, like protobuf's int64
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def decode_varint(data, pos: int) -> tuple[int, int]:
    """(value, position after it); DecodeError when truncated or longer than 64 bits."""
    result = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise DecodeError("Truncated or overlong varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def signed64(n: int) -> int:
    return n - (1 << 64) if n >= 1 << 63 else n


def field_key(number: int, wire: int) -> bytes:
    return encode_varint((number << 3) | wire)


def len_delimited(number: int, payload: bytes) -> bytes:
    return field_key(number, LEN) + encode_varint(len(payload)) + payload


def read_chunk(data, pos: int) -> tuple[bytes, int]:
    """A length-delimited payload starting at ``pos``: (bytes, position after it)."""
    n, pos = decode_varint(data, pos)
    if pos + n > len(data):
        raise DecodeError("Truncated length-delimited field")
    return bytes(data[pos:pos + n]), pos + n


def skip_field(wire: int, data, pos: int) -> int:
    if wire == VARINT:
        return decode_varint(data, pos)[1]
    if wire == LEN:
        return read_chunk(data, pos)[1]
    size = {I64: 8, I32: 4}.get(wire)
    if size is None or pos + size > len(data):
        raise DecodeError(f"Cannot skip unknown field with wire type {wire}")
    return pos + size


def _to_float32(x) -> float:
    return struct.unpack("<f", struct.pack("<f", float(x)))[0]


_MISSING = object()
_VARINT_KINDS = ("int64", "int32", "uint64", "enum", "bool")
_FIXED = {"double": (I64, "d", 8), "float": (I32, "f", 4), "fixed32": (I32, "I", 4)}
_DEFAULTS = {"double": 0.0, "float": 0.0, "int64": 0, "int32": 0, "uint64": 0, "enum": 0,
             "bool": False, "fixed32": 0, "string": "", "bytes": b""}
_COERCE = {
    "double": float, "float": _to_float32, "int64": int, "int32": int, "uint64": int,
    "enum": int, "bool": bool, "fixed32": int,
    "string": lambda v: v.decode("utf-8") if isinstance(v, bytes) else str(v),
    "bytes": lambda v: v.encode("utf-8") if isinstance(v, str) else bytes(v),
}


def _encode_bare(kind: str, value) -> bytes:
    """A numeric value without its key (what a packed field concatenates)."""
    if kind in _FIXED:
        return struct.pack("<" + _FIXED[kind][1], value)
    return encode_varint(int(value))


def _encode_scalar(f: Field, value) -> bytes:
    kind = f.kind
    if kind in _FIXED:
        return field_key(f.number, _FIXED[kind][0]) + _encode_bare(kind, value)
    if kind in _VARINT_KINDS:
        return field_key(f.number, VARINT) + encode_varint(int(value))
    if kind == "string":
        return len_delimited(f.number, value.encode("utf-8"))
    if kind == "bytes":
        return len_delimited(f.number, value)
    return len_delimited(f.number, value.SerializeToString())  # message / map entry


def _varint_value(kind: str, n: int):
    if kind == "bool":
        return bool(n)
    if kind == "uint64":
        return n
    if kind == "int32" or kind == "enum":
        n &= 0xFFFFFFFF
        return n - (1 << 32) if n >= 1 << 31 else n
    return signed64(n)


def _decode_value(f: Field, wire: int, data, pos: int):
    """Reads one value (or a packed run) of field ``f``; returns (values list, new pos)."""
    kind = f.kind
    if kind in _FIXED:
        want, fmt, size = _FIXED[kind]
        if wire == want:
            if pos + size > len(data):
                raise DecodeError(f"Truncated field {f.name}")
            return [struct.unpack_from("<" + fmt, data, pos)[0]], pos + size
        if wire == LEN and f.repeated:
            chunk, pos = read_chunk(data, pos)
            if len(chunk) % size:
                raise DecodeError(f"Packed field {f.name} length is not a multiple of {size}")
            return list(struct.unpack(f"<{len(chunk) // size}{fmt}", chunk)), pos
    elif kind in _VARINT_KINDS:
        if wire == VARINT:
            n, pos = decode_varint(data, pos)
            return [_varint_value(kind, n)], pos
        if wire == LEN and f.repeated:
            chunk, pos = read_chunk(data, pos)
            out, p = [], 0
            while p < len(chunk):
                n, p = decode_varint(chunk, p)
                out.append(_varint_value(kind, n))
            return out, pos
    elif wire == LEN:
        chunk, pos = read_chunk(data, pos)
        if kind == "string":
            try:
                return [chunk.decode("utf-8")], pos
            except UnicodeDecodeError as e:
                raise DecodeError(f"Field {f.name} is not valid UTF-8: {e}") from None
        if kind == "bytes":
            return [chunk], pos
        return [f.message.FromString(chunk)], pos
    raise DecodeError(f"Field {f.name} has wire type {wire}, which does not fit a {kind}")


# -- containers ------------------------------------------------------------------------------
class RepeatedField(list):
    """A repeated field: a list whose ``add(**fields)`` appends a new sub-message."""

    def __init__(self, field: Field, items=()):
        super().__init__(_coerce(field, v) for v in items)
        self._field = field

    def add(self, **kwargs):
        item = self._field.message(**kwargs)
        self.append(item)
        return item

    def append(self, value):
        super().append(_coerce(self._field, value))

    def extend(self, values):
        super().extend(_coerce(self._field, v) for v in values)


class MessageMap(dict):
    """A map field. Message values spring into being on first access, as in protobuf."""

    def __init__(self, field: Field, items=()):
        super().__init__()
        self._field = field
        self._value_field = field.message._by_name["value"]
        for k, v in dict(items).items():
            self[k] = v

    def __setitem__(self, key, value):
        super().__setitem__(key, _coerce(self._value_field, value))

    def __missing__(self, key):
        if self._value_field.kind != "message":
            raise KeyError(key)
        value = self._value_field.message()
        super().__setitem__(key, value)
        return value

    def get_or_create(self, key):
        return self[key]


def _coerce(f: Field, value):
    if f.kind in ("message", "map"):
        if isinstance(value, dict):
            return f.message(**value)
        if not isinstance(value, f.message):
            raise TypeError(f"Field {f.name} expects {f.message.__name__}, got {type(value).__name__}")
        return value
    return _COERCE[f.kind](value)


class Message:
    """Base of the hand-written messages; subclasses set ``FIELDS``."""

    FIELDS: tuple = ()
    _by_name: dict = {}
    _by_number: dict = {}

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        cls._by_name = {f.name: f for f in cls.FIELDS}
        cls._by_number = {f.number: f for f in cls.FIELDS}

    def __init__(self, **kwargs):
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_present", set())  # explicitly set (oneof presence)
        for name, value in kwargs.items():
            f = self._field(name)
            if f.kind == "map":
                self._values[name] = MessageMap(f, value)
            elif f.repeated:
                self._values[name] = RepeatedField(f, value)
            else:
                setattr(self, name, value)

    @classmethod
    def _field(cls, name) -> Field:
        try:
            return cls._by_name[name]
        except KeyError:
            raise AttributeError(f"{cls.__name__} has no field named {name!r}") from None

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        f = self._field(name)
        if f.kind == "map":
            return self._values.setdefault(name, MessageMap(f))
        if f.repeated:
            return self._values.setdefault(name, RepeatedField(f))
        if f.kind == "message":
            # A sub-message is created on first access; it counts as set once it has content.
            return self._values.setdefault(name, f.message())
        return self._values.get(name, _DEFAULTS[f.kind])

    def __setattr__(self, name, value):
        f = self._field(name)
        if f.repeated or f.kind == "map":
            raise AttributeError(f"Assignment not allowed to repeated field {name!r} in protocol message object.")
        if f.oneof:
            for other in self.FIELDS:
                if other.oneof == f.oneof and other.name != name:
                    self.ClearField(other.name)
        self._values[name] = _coerce(f, value)
        self._present.add(name)

    def HasField(self, name) -> bool:  # noqa: N802 - protobuf's name
        f = self._field(name)
        if f.repeated or f.kind == "map":
            raise ValueError(f"Protocol message has no singular {name!r} field.")
        if name in self._present and (f.oneof or f.kind == "message"):
            return True  # proto3: only oneof members and messages have presence
        value = self._values.get(name)
        if f.kind == "message":
            return value is not None and bool(value.ListFields())
        return value is not None and value != _DEFAULTS[f.kind]

    def WhichOneof(self, group):  # noqa: N802 - protobuf's name
        members = [f for f in self.FIELDS if f.oneof == group]
        if not members:
            raise ValueError(f"Protocol message has no oneof {group!r} field.")
        return next((f.name for f in members if self.HasField(f.name)), None)

    def ClearField(self, name):  # noqa: N802 - protobuf's name
        self._field(name)
        self._values.pop(name, None)
        self._present.discard(name)

    def ListFields(self):  # noqa: N802 - protobuf's name
        # HasField's rules inlined: serializing a graph calls this once per sub-message.
        out = []
        values, present = self._values, self._present
        if not values:
            return out
        for f in self.FIELDS:
            v = values.get(f.name, _MISSING)
            if v is _MISSING:
                continue
            if f.repeated or f.kind == "map":
                if v:
                    out.append((f, v))
            elif f.name in present and (f.oneof or f.kind == "message"):
                out.append((f, v))
            elif (v.ListFields() if f.kind == "message" else v != _DEFAULTS[f.kind]):
                out.append((f, v))
        return out

    def SerializeToString(self, deterministic=None) -> bytes:  # noqa: N802
        parts = []
        for f, value in self.ListFields():
            if f.kind == "map":
                for k in sorted(value):  # deterministic, as TF's own serializers
                    parts.append(_encode_scalar(f, f.message(key=k, value=value[k])))
            elif f.packed:
                parts.append(len_delimited(f.number, b"".join(_encode_bare(f.kind, v) for v in value)))
            elif f.repeated:
                parts.extend(_encode_scalar(f, v) for v in value)
            else:
                parts.append(_encode_scalar(f, value))
        return b"".join(parts)

    def ParseFromString(self, data) -> int:  # noqa: N802
        self.Clear()
        self.MergeFromString(data)
        return len(data)

    def MergeFromString(self, data) -> int:  # noqa: N802
        data = memoryview(data).cast("B") if not isinstance(data, bytes) else data
        pos = 0
        while pos < len(data):
            tag, pos = decode_varint(data, pos)
            number, wire = tag >> 3, tag & 7
            f = self._by_number.get(number)
            if f is None:
                pos = skip_field(wire, data, pos)
                continue
            values, pos = _decode_value(f, wire, data, pos)
            if f.kind == "map":
                entry = values[0]
                getattr(self, f.name)[entry.key] = entry.value
            elif f.repeated:
                getattr(self, f.name).extend(values)
            elif f.kind == "message" and self.HasField(f.name):
                getattr(self, f.name).MergeFrom(values[0])  # protobuf merges repeated sub-messages
            else:
                setattr(self, f.name, values[-1])
        return len(data)

    @classmethod
    def FromString(cls, data):  # noqa: N802
        msg = cls()
        msg.MergeFromString(data)
        return msg

    def MergeFrom(self, other):  # noqa: N802
        self.MergeFromString(other.SerializeToString())

    def CopyFrom(self, other):  # noqa: N802
        self.ParseFromString(other.SerializeToString())

    def Clear(self):  # noqa: N802
        self._values.clear()
        self._present.clear()

    def ByteSize(self) -> int:  # noqa: N802
        return len(self.SerializeToString())

    def __eq__(self, other):
        return type(self) is type(other) and self.SerializeToString() == other.SerializeToString()

    def __repr__(self):
        inner = ", ".join(f"{f.name}={v!r}" for f, v in self.ListFields())
        return f"{type(self).__name__}({inner})"

    def __str__(self):
        from .prototext import to_text  # the text format, as str() of a protobuf message

        return to_text(self)


def fields(*specs) -> tuple:
    """A FIELDS table from ``(number, name, kind[, message])`` tuples or Field objects."""
    return tuple(Field(*s) if isinstance(s, tuple) else s for s in specs)
