"""The protobuf messages of TensorBoard event files, encoded and decoded by hand.

Only what summaries need: ``Event`` (tensorflow/core/util/event.proto), ``Summary`` and
``HistogramProto`` (tensorflow/core/framework/summary.proto), ``SessionLog`` and a
name/op/input/device subset of ``GraphDef``. Field numbers and wire types are TF's, so
the bytes read the same in TensorBoard and in TF's generated classes.

Each message declares its fields in a table; one generic codec serializes and parses them
all. The Python surface follows the protobuf API that TF1 programs use: keyword
constructors, attribute access with proto3 defaults, ``repeated.add(...)``,
``HasField``, ``WhichOneof``, ``SerializeToString``, ``FromString``, ``ParseFromString``.
Unknown fields are skipped when parsing, as protobuf does for fields it does not know.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


class DecodeError(ValueError):
    """Malformed protobuf bytes (google.protobuf.message.DecodeError's role)."""


@dataclass(frozen=True)
class Field:
    number: int
    name: str
    kind: str  # double | float | int64 | enum | string | bytes | message | packed_{double,float,int64}
    message: type | None = None
    repeated: bool = False
    oneof: str | None = None


# -- wire primitives ----------------------------------------------------------------------

def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negatives are 10-byte two's complement, like protobuf's int64
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
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


def _signed64(n: int) -> int:
    return n - (1 << 64) if n >= 1 << 63 else n


def _key(number: int, wire: int) -> bytes:
    return _varint((number << 3) | wire)


def _len_delimited(number: int, payload: bytes) -> bytes:
    return _key(number, _LEN) + _varint(len(payload)) + payload


def _to_float32(x) -> float:
    return struct.unpack("<f", struct.pack("<f", float(x)))[0]


_DEFAULTS = {"double": 0.0, "float": 0.0, "int64": 0, "enum": 0, "string": "", "bytes": b""}
_COERCE = {
    "double": float, "float": _to_float32, "int64": int, "enum": int,
    "string": lambda v: v.decode("utf-8") if isinstance(v, bytes) else str(v),
    "bytes": lambda v: v.encode("utf-8") if isinstance(v, str) else bytes(v),
    "packed_double": float,
    "packed_float": _to_float32,
    "packed_int64": int,
}


def _encode_scalar(f: Field, value) -> bytes:
    kind = f.kind
    if kind == "double":
        return _key(f.number, _I64) + struct.pack("<d", value)
    if kind == "float":
        return _key(f.number, _I32) + struct.pack("<f", value)
    if kind in ("int64", "enum"):
        return _key(f.number, _VARINT) + _varint(value)
    if kind == "string":
        return _len_delimited(f.number, value.encode("utf-8"))
    if kind == "bytes":
        return _len_delimited(f.number, value)
    return _len_delimited(f.number, value.SerializeToString())  # message


_FIXED = {"double": (_I64, "<d", 8), "float": (_I32, "<f", 4), "packed_double": (_I64, "<d", 8),
          "packed_float": (_I32, "<f", 4)}
_PACKED_FORMAT = {"packed_double": ("d", 8), "packed_float": ("f", 4)}


def _decode_value(f: Field, wire: int, data: bytes, pos: int):
    """Reads one value of field ``f``; returns (values list, new pos)."""
    if f.kind in _FIXED:
        want, fmt, size = _FIXED[f.kind]
        if wire == want:
            if pos + size > len(data):
                raise DecodeError(f"Truncated field {f.name}")
            return [struct.unpack_from(fmt, data, pos)[0]], pos + size
        if wire == _LEN and f.kind in _PACKED_FORMAT:
            code, size = _PACKED_FORMAT[f.kind]
            chunk, pos = _read_chunk(data, pos)
            if len(chunk) % size:
                raise DecodeError(f"Packed field {f.name} length is not a multiple of {size}")
            return list(struct.unpack(f"<{len(chunk) // size}{code}", chunk)), pos
    elif f.kind == "packed_int64" and wire == _LEN:
        chunk, pos = _read_chunk(data, pos)
        values, at = [], 0
        while at < len(chunk):
            n, at = _read_varint(chunk, at)
            values.append(_signed64(n))
        return values, pos
    elif f.kind in ("int64", "enum", "packed_int64") and wire == _VARINT:
        n, pos = _read_varint(data, pos)
        return [_signed64(n)], pos
    elif wire == _LEN:
        chunk, pos = _read_chunk(data, pos)
        if f.kind == "string":
            try:
                return [chunk.decode("utf-8")], pos
            except UnicodeDecodeError as e:
                raise DecodeError(f"Field {f.name} is not valid UTF-8: {e}") from None
        if f.kind == "bytes":
            return [chunk], pos
        return [f.message.FromString(chunk)], pos
    raise DecodeError(f"Field {f.name} has wire type {wire}, which does not fit a {f.kind}")


def _read_chunk(data: bytes, pos: int) -> tuple[bytes, int]:
    n, pos = _read_varint(data, pos)
    if pos + n > len(data):
        raise DecodeError("Truncated length-delimited field")
    return bytes(data[pos:pos + n]), pos + n


def _skip(wire: int, data: bytes, pos: int) -> int:
    if wire == _VARINT:
        return _read_varint(data, pos)[1]
    if wire == _LEN:
        return _read_chunk(data, pos)[1]
    size = {_I64: 8, _I32: 4}.get(wire)
    if size is None or pos + size > len(data):
        raise DecodeError(f"Cannot skip unknown field with wire type {wire}")
    return pos + size


# -- messages -------------------------------------------------------------------------------

class RepeatedField(list):
    """A repeated field: a list whose ``add(**fields)`` appends a new sub-message."""

    def __init__(self, field: Field, items=()):
        super().__init__(_coerce(field, v) for v in items)
        self._field = field

    def add(self, **kwargs):
        item = self._field.message(**kwargs)
        self.append(item)
        return item


def _coerce(f: Field, value):
    if f.kind == "message":
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
            if f.repeated:
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
        if f.repeated:
            return self._values.setdefault(name, RepeatedField(f))
        if f.kind == "message":
            # A sub-message is created on first access; it counts as set once it has content.
            return self._values.setdefault(name, f.message())
        return self._values.get(name, _DEFAULTS[f.kind])

    def __setattr__(self, name, value):
        f = self._field(name)
        if f.repeated:
            raise AttributeError(f"Assignment not allowed to repeated field {name!r} in protocol message object.")
        if f.oneof:
            for other in self.FIELDS:
                if other.oneof == f.oneof and other.name != name:
                    self.ClearField(other.name)
        self._values[name] = _coerce(f, value)
        self._present.add(name)

    def HasField(self, name) -> bool:  # noqa: N802 - protobuf's name
        f = self._field(name)
        if f.repeated:
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
        out = []
        for f in self.FIELDS:
            if f.repeated:
                if self._values.get(f.name):
                    out.append((f, self._values[f.name]))
            elif self.HasField(f.name):
                out.append((f, getattr(self, f.name)))
        return out

    def SerializeToString(self, deterministic=None) -> bytes:  # noqa: N802
        parts = []
        for f, value in self.ListFields():
            if f.kind in _PACKED_FORMAT:
                code = _PACKED_FORMAT[f.kind][0]
                parts.append(_len_delimited(f.number, struct.pack(f"<{len(value)}{code}", *value)))
            elif f.kind == "packed_int64":
                parts.append(_len_delimited(f.number, b"".join(_varint(v) for v in value)))
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
        data = bytes(data)
        pos = 0
        while pos < len(data):
            tag, pos = _read_varint(data, pos)
            number, wire = tag >> 3, tag & 7
            f = self._by_number.get(number)
            if f is None:
                pos = _skip(wire, data, pos)
                continue
            values, pos = _decode_value(f, wire, data, pos)
            if f.repeated:
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


def _fields(*specs) -> tuple:
    return tuple(Field(*s) if isinstance(s, tuple) else s for s in specs)


class HistogramProto(Message):
    FIELDS = _fields(
        (1, "min", "double"), (2, "max", "double"), (3, "num", "double"), (4, "sum", "double"),
        (5, "sum_squares", "double"),
        Field(6, "bucket_limit", "packed_double", repeated=True),
        Field(7, "bucket", "packed_double", repeated=True),
    )


class PluginData(Message):
    FIELDS = _fields((1, "plugin_name", "string"), (2, "content", "bytes"))


class SummaryMetadata(Message):
    PluginData = PluginData
    FIELDS = _fields(
        (1, "plugin_data", "message", PluginData), (2, "display_name", "string"),
        (3, "summary_description", "string"), (4, "data_class", "enum"),
    )


class SummaryImage(Message):
    FIELDS = _fields((1, "height", "enum"), (2, "width", "enum"), (3, "colorspace", "enum"),
                     (4, "encoded_image_string", "bytes"))


class SummaryAudio(Message):
    FIELDS = _fields((1, "sample_rate", "float"), (2, "num_channels", "int64"),
                     (3, "length_frames", "int64"), (4, "encoded_audio_string", "bytes"),
                     (5, "content_type", "string"))


class TensorShapeDim(Message):
    FIELDS = _fields((1, "size", "int64"), (2, "name", "string"))


class TensorShapeProto(Message):
    Dim = TensorShapeDim
    FIELDS = _fields(Field(2, "dim", "message", TensorShapeDim, repeated=True),
                     (3, "unknown_rank", "enum"))


class TensorProto(Message):
    """A tensor's value: numbers as little-endian ``tensor_content``, strings in
    ``string_val`` (what tensor summaries carry)."""

    FIELDS = _fields((1, "dtype", "enum"), (2, "tensor_shape", "message", TensorShapeProto),
                     (3, "version_number", "enum"), (4, "tensor_content", "bytes"),
                     Field(8, "string_val", "bytes", repeated=True))


class SummaryValue(Message):
    FIELDS = _fields(
        (7, "node_name", "string"), (1, "tag", "string"),
        (9, "metadata", "message", SummaryMetadata),
        Field(2, "simple_value", "float", oneof="value"),
        Field(3, "obsolete_old_style_histogram", "bytes", oneof="value"),
        Field(4, "image", "message", SummaryImage, oneof="value"),
        Field(5, "histo", "message", HistogramProto, oneof="value"),
        Field(6, "audio", "message", SummaryAudio, oneof="value"),
        Field(8, "tensor", "message", TensorProto, oneof="value"),
    )


class Summary(Message):
    Value = SummaryValue
    Image = SummaryImage
    Audio = SummaryAudio
    FIELDS = _fields(Field(1, "value", "message", SummaryValue, repeated=True))


class SessionLog(Message):
    STATUS_UNSPECIFIED, START, STOP, CHECKPOINT = 0, 1, 2, 3
    FIELDS = _fields((1, "status", "enum"), (2, "checkpoint_path", "string"), (3, "msg", "string"))


class TaggedRunMetadata(Message):
    FIELDS = _fields((1, "tag", "string"), (2, "run_metadata", "bytes"))


class Event(Message):
    FIELDS = _fields(
        (1, "wall_time", "double"), (2, "step", "int64"),
        Field(3, "file_version", "string", oneof="what"),
        Field(4, "graph_def", "bytes", oneof="what"),
        Field(5, "summary", "message", Summary, oneof="what"),
        Field(7, "session_log", "message", SessionLog, oneof="what"),
        Field(8, "tagged_run_metadata", "message", TaggedRunMetadata, oneof="what"),
        Field(9, "meta_graph_def", "bytes", oneof="what"),
    )


class NodeDef(Message):
    """GraphDef's node without attrs: enough for TensorBoard to draw the graph."""

    FIELDS = _fields((1, "name", "string"), (2, "op", "string"),
                     Field(3, "input", "string", repeated=True), (4, "device", "string"))


class VersionDef(Message):
    FIELDS = _fields((1, "producer", "enum"), (2, "min_consumer", "enum"))


class GraphDef(Message):
    FIELDS = _fields(Field(1, "node", "message", NodeDef, repeated=True),
                     (4, "versions", "message", VersionDef))


__all__ = ["DecodeError", "Event", "GraphDef", "HistogramProto", "NodeDef", "SessionLog",
           "Summary", "SummaryMetadata", "TaggedRunMetadata", "VersionDef"]
