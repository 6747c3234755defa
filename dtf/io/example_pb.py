"""``tf.train.Example`` and its parts (tensorflow/core/example/{example,feature}.proto),
hand-encoded with dtf's protobuf codec (dtf/framework/protowire.py): the bytes read the
same in TF's generated classes, and no protobuf dependency is needed."""
from __future__ import annotations

from dtf.framework.protowire import (
    LEN, DecodeError, Field, Message, decode_varint, fields, len_delimited, read_chunk, skip_field,
)


class BytesList(Message):
    FIELDS = fields(Field(1, "value", "bytes", repeated=True))


class FloatList(Message):
    FIELDS = fields(Field(1, "value", "float", repeated=True, packed=True))


class Int64List(Message):
    FIELDS = fields(Field(1, "value", "int64", repeated=True, packed=True))


class Feature(Message):
    FIELDS = fields(
        Field(1, "bytes_list", "message", BytesList, oneof="kind"),
        Field(2, "float_list", "message", FloatList, oneof="kind"),
        Field(3, "int64_list", "message", Int64List, oneof="kind"),
    )


class MessageMap(dict):
    """A ``map<string, Message>`` field: reading a missing key adds an empty message."""

    def __init__(self, value_cls, items=()):
        super().__init__()
        self._value_cls = value_cls
        for k, v in dict(items).items():
            self[k] = v

    def __setitem__(self, key, value):
        if isinstance(value, dict):
            value = self._value_cls(**value)
        if not isinstance(value, self._value_cls):
            raise TypeError(f"map values must be {self._value_cls.__name__}, got {type(value).__name__}")
        super().__setitem__(str(key), value)

    def __missing__(self, key):
        value = self._value_cls()
        super().__setitem__(key, value)
        return value

    def get_or_create(self, key):
        return self[key]


class _MapHolder(Message):
    """A message whose only field is a string-keyed map of messages (``MAP``: field number,
    name, value class). Entries are encoded as TF's protos do: sub-messages with the key
    as field 1 and the value as field 2, in key order so equal maps encode equally."""

    MAP: tuple = ()

    def __init__(self, **kwargs):
        number, name, value_cls = self.MAP
        object.__setattr__(self, "_values", {})
        object.__setattr__(self, "_present", set())
        object.__setattr__(self, name, MessageMap(value_cls, kwargs.pop(name, {})))
        if kwargs:
            raise AttributeError(f"{type(self).__name__} has no field named {sorted(kwargs)[0]!r}")

    def _map(self) -> MessageMap:
        return object.__getattribute__(self, self.MAP[1])

    def ListFields(self):  # noqa: N802 - protobuf's name
        m = self._map()
        return [(Field(self.MAP[0], self.MAP[1], "message", self.MAP[2], repeated=True), m)] if m else []

    def SerializeToString(self, deterministic=None) -> bytes:  # noqa: N802
        number = self.MAP[0]
        m = self._map()
        return b"".join(
            len_delimited(number, len_delimited(1, k.encode()) + len_delimited(2, m[k].SerializeToString()))
            for k in sorted(m))

    def MergeFromString(self, data) -> int:  # noqa: N802
        data = bytes(data)
        number, _, value_cls = self.MAP
        m = self._map()
        pos = 0
        while pos < len(data):
            tag, pos = decode_varint(data, pos)
            if tag >> 3 != number or tag & 7 != LEN:
                pos = skip_field(tag & 7, data, pos)
                continue
            entry, pos = read_chunk(data, pos)
            key, value, at = "", value_cls(), 0
            while at < len(entry):
                etag, at = decode_varint(entry, at)
                if etag == (1 << 3) | LEN:
                    raw, at = read_chunk(entry, at)
                    try:
                        key = raw.decode("utf-8")
                    except UnicodeDecodeError as e:
                        raise DecodeError(f"map key is not valid UTF-8: {e}") from None
                elif etag == (2 << 3) | LEN:
                    raw, at = read_chunk(entry, at)
                    value.MergeFromString(raw)
                else:
                    at = skip_field(etag & 7, entry, at)
            m[key] = value
        return len(data)

    def Clear(self):  # noqa: N802
        self._map().clear()


class Features(_MapHolder):
    MAP = (1, "feature", Feature)


class FeatureList(Message):
    FIELDS = fields(Field(1, "feature", "message", Feature, repeated=True))


class FeatureLists(_MapHolder):
    MAP = (1, "feature_list", FeatureList)


class Example(Message):
    FIELDS = fields((1, "features", "message", Features))


class SequenceExample(Message):
    FIELDS = fields((1, "context", "message", Features),
                     (2, "feature_lists", "message", FeatureLists))


__all__ = ["BytesList", "Example", "Feature", "FeatureList", "FeatureLists", "Features",
           "FloatList", "Int64List", "SequenceExample"]
