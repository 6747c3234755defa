"""Protocol-buffer text format: what TF's ``text_format`` writes (``.pbtxt`` graphs,
text meta graphs, ``str(message)``), for the messages of dtf/framework/protowire.py.
Enum fields with ``enum_names`` are written and read by name (``dtype: DT_FLOAT``).
"""
from __future__ import annotations

import re

from .protowire import DecodeError, Field, Message


# -- writing ----------------------------------------------------------------------------------
def _text_escape(data: bytes) -> str:
    out = []
    for b in data:
        c = chr(b)
        if c in "\n\r\t\"'\\":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c, "\\" + c))
        elif 0x20 <= b < 0x7F:
            out.append(c)
        else:
            out.append(f"\\{b:03o}")
    return "".join(out)


def _text_scalar(kind: str, value) -> str:
    if kind == "string":
        return f'"{_text_escape(value.encode("utf-8"))}"'
    if kind == "bytes":
        return f'"{_text_escape(value)}"'
    if kind == "bool":
        return "true" if value else "false"
    if kind in ("float", "double"):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return repr(float(value)) if kind == "double" else f"{value:.9g}"
    return str(int(value))


def to_text(msg: Message, indent: int = 0) -> str:
    pad = "  " * indent
    lines = []

    def message_block(name, sub):
        body = to_text(sub, indent + 1)
        lines.append(f"{pad}{name} {{\n{body}{pad}}}\n")

    for f, value in msg.ListFields():
        if f.kind == "map":
            for k in sorted(value):
                message_block(f.name, f.message(key=k, value=value[k]))
            continue
        for v in (value if f.repeated else [value]):
            if f.kind == "message":
                message_block(f.name, v)
            elif f.enum_names and v in _reverse(f.enum_names):
                lines.append(f"{pad}{f.name}: {_reverse(f.enum_names)[v]}\n")
            else:
                lines.append(f"{pad}{f.name}: {_text_scalar(f.kind, v)}\n")
    return "".join(lines)


_REVERSED: dict = {}


def _reverse(names: dict) -> dict:
    key = id(names)
    if key not in _REVERSED:
        _REVERSED[key] = {v: k for k, v in names.items()}
    return _REVERSED[key]


# -- parsing the text format ----------------------------------------------------------------
_TOKEN = re.compile(r"""
    \s+ | \#[^\n]* |                                    # space, comments
    (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*') |
    (?P<num>[-+]?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[fF]?|inf|nan)(?![\w.])) |
    (?P<ident>[-+]?[A-Za-z_][\w.]*) |
    (?P<sym>[{}<>\[\]:,;])
""", re.VERBOSE)
_ESCAPES = {"n": 10, "r": 13, "t": 9, "'": 39, '"': 34, "\\": 92, "a": 7, "b": 8, "f": 12, "v": 11,
            "?": 63}


def _unescape(body: str) -> bytes:
    out, i, raw = bytearray(), 0, body.encode("utf-8")
    while i < len(raw):
        c = raw[i]
        if c != 92:
            out.append(c)
            i += 1
            continue
        nxt = chr(raw[i + 1])
        if nxt in "01234567":
            j = i + 1
            while j < min(i + 4, len(raw)) and chr(raw[j]) in "01234567":
                j += 1
            out.append(int(raw[i + 1:j], 8) & 0xFF)
            i = j
        elif nxt in "xX":
            j = i + 2
            while j < min(i + 4, len(raw)) and chr(raw[j]) in "0123456789abcdefABCDEF":
                j += 1
            out.append(int(raw[i + 2:j], 16))
            i = j
        elif nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
        else:
            raise DecodeError(f"Invalid escape \\{nxt} in text-format string")
    return bytes(out)


def _tokens(text: str):
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            line = text.count("\n", 0, pos) + 1
            raise DecodeError(f"text format, line {line}: unexpected {text[pos:pos + 20]!r}")
        pos = m.end()
        if m.lastgroup:
            yield m.lastgroup, m.group(m.lastgroup)


def _scalar_from_text(f: Field, kind: str, token: str):
    if f.kind in ("string", "bytes"):
        if kind != "str":
            raise DecodeError(f"field {f.name}: expected a quoted string, got {token!r}")
        return _unescape(token[1:-1])
    if f.kind == "bool":
        if token in ("true", "True", "t", "1"):
            return True
        if token in ("false", "False", "f", "0"):
            return False
        raise DecodeError(f"field {f.name}: expected true or false, got {token!r}")
    if f.kind in ("float", "double"):
        t = token.lower().rstrip("f") if not token.lower().endswith("inf") else token.lower()
        return float(t.replace("infinity", "inf"))
    if kind == "ident" and f.enum_names is not None and token in f.enum_names:
        return f.enum_names[token]
    try:
        return int(token, 0)
    except ValueError:
        raise DecodeError(f"field {f.name}: {token!r} is not a {f.kind}") from None


def _parse_text_into(msg: Message, tokens, closing):
    while True:
        kind, token = next(tokens, (None, None))
        if kind is None:
            if closing:
                raise DecodeError(f"text format: missing {closing!r}")
            return
        if kind == "sym" and token == closing:
            return
        if kind == "sym" and token in ",;":
            continue
        if kind != "ident":
            raise DecodeError(f"text format: expected a field name, got {token!r}")
        f = msg._by_name.get(token)
        if f is None:
            raise DecodeError(f"text format: {type(msg).__name__} has no field named {token!r}")
        kind, token = next(tokens, (None, None))
        if kind == "sym" and token == ":":
            kind, token = next(tokens, (None, None))
        values = []
        if kind == "sym" and token == "[":
            while True:
                kind, token = next(tokens, (None, None))
                if token == "]":
                    break
                if token != ",":
                    values.append((kind, token))
        else:
            values.append((kind, token))
        for kind, token in values:
            if f.kind in ("message", "map"):
                if token not in ("{", "<"):
                    raise DecodeError(f"text format: field {f.name} expects {{...}}, got {token!r}")
                sub = f.message()
                _parse_text_into(sub, tokens, "}" if token == "{" else ">")
                value = sub
            else:
                value = _scalar_from_text(f, kind, token)
                if f.kind == "string":
                    value = value.decode("utf-8")
            if f.kind == "map":
                getattr(msg, f.name)[value.key] = value.value
            elif f.repeated:
                getattr(msg, f.name).append(value)
            elif f.kind == "message" and msg.HasField(f.name):
                getattr(msg, f.name).MergeFrom(value)
            else:
                setattr(msg, f.name, value)


def from_text(cls, text: str):
    """A message of class ``cls`` from protobuf text format (what ``to_text`` and TF's
    text_format write); DecodeError naming what did not parse."""
    msg = cls()
    _parse_text_into(msg, _tokens(text), None)
    return msg
