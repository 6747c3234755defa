"""Reference kernels of the string ops (dtf/ops/string_ops.py). Strings are bytes in numpy
object arrays; each rule below is TF's kernel's, checked by tests/goldens/cases_strings.py.
"""
from __future__ import annotations

import re

import numpy as np

from dtf.framework import errors

from .table import reference

_ASCII_SPACE = b" \t\n\v\f\r"


def _bad(message):
    return errors.InvalidArgumentError(None, None, message)


def _b(v):
    return v.encode() if isinstance(v, str) else bytes(v)


def _array(x):
    return np.asarray(x, dtype=object)


def _scalar(x, what):
    x = np.asarray(x, dtype=object)
    if x.ndim != 0:
        raise _bad(f"{what} must be a scalar, got shape {list(x.shape)}")
    return _b(x.item())


def _to_sparse(rows):
    """(indices, values, dense_shape) of one token list per input string."""
    indices = [[i, j] for i, toks in enumerate(rows) for j in range(len(toks))]
    values = np.empty(len(indices), dtype=object)
    values[:] = [t for toks in rows for t in toks]
    width = max((len(t) for t in rows), default=0)
    return (np.asarray(indices, np.int64).reshape(-1, 2), values,
            np.asarray([len(rows), width], np.int64))


def _vector(x, what):
    x = _array(x)
    if x.ndim != 1:
        raise _bad(f"{what} must be a vector, got shape {list(x.shape)}")
    return [_b(v) for v in x]


@reference("StringSplit")
def _string_split(attrs, source, delimiter):
    delim = _scalar(delimiter, "delimiter")
    skip = attrs.get("skip_empty", True)
    rows = []
    for s in _vector(source, "input"):
        if not s:
            rows.append([])  # TF: an empty string has no tokens, even keeping empty ones
        elif not delim:
            rows.append([bytes([c]) for c in s])
        else:
            toks = re.split(b"[" + re.escape(delim) + b"]", s)
            rows.append([t for t in toks if t] if skip else toks)
    return _to_sparse(rows)


@reference("StringSplitV2")
def _string_split_v2(attrs, source, sep):
    sep = _scalar(sep, "sep")
    maxsplit = int(attrs.get("maxsplit", -1))
    rows = []
    for s in _vector(source, "input"):
        if not sep:  # whitespace runs, Python's str.split()
            rows.append(s.split(None, maxsplit) if maxsplit >= 0 else s.split())
        else:
            rows.append(s.split(sep, maxsplit))
    return _to_sparse(rows)


_INT_RE = re.compile(rb"^\s*[+-]?[0-9]+\s*$")
_LIMITS = {"int32": (-(1 << 31), (1 << 31) - 1), "int64": (-(1 << 63), (1 << 63) - 1)}


@reference("StringToNumber")
def _string_to_number(attrs, strings):
    out_type = attrs["out_type"]
    x = _array(strings)
    out = np.empty(x.shape, out_type.as_numpy_dtype)
    flat = out.reshape(-1)
    for i, v in enumerate(x.reshape(-1)):
        s = _b(v)
        try:
            if out_type.is_integer:
                if not _INT_RE.match(s):
                    raise ValueError
                n = int(s)
                lo, hi = _LIMITS[out_type.name]
                if not lo <= n <= hi:
                    raise ValueError
                flat[i] = n
            else:
                if b"_" in s:
                    raise ValueError
                flat[i] = float(s)
        except ValueError:
            raise _bad(f"StringToNumberOp could not correctly convert string: "
                       f"{s.decode(errors='replace')}") from None
    return out


def _joined(parts, sep):
    out = np.empty(np.broadcast(*parts).shape if parts else (), dtype=object)
    flat = out.reshape(-1)
    for i, row in enumerate(zip(*(np.broadcast_to(p, out.shape).reshape(-1) for p in parts))):
        flat[i] = sep.join(_b(v) for v in row)
    return out


@reference("StringJoin")
def _string_join(attrs, *inputs):
    parts = [_array(x) for x in inputs]
    shapes = {p.shape for p in parts if p.ndim}
    if len(shapes) > 1:
        raise _bad(f"Input shapes do not match: {[list(p.shape) for p in parts]}")
    return _joined(parts, _b(attrs.get("separator", "")))


@reference("ReduceJoin")
def _reduce_join(attrs, inputs, reduction_indices):
    x = _array(inputs)
    rank = x.ndim
    axes = []
    for a in np.asarray(reduction_indices).reshape(-1):
        a = int(a)
        if not -rank <= a < max(rank, 1):
            raise _bad(f"Invalid reduction dimension {a} for input with {rank} dimensions.")
        a %= max(rank, 1)
        if a in axes:
            raise _bad(f"Duplicate reduction dimension {a}")
        axes.append(a)
    kept = [i for i in range(rank) if i not in axes]
    # The first listed axis varies fastest in the joined order (TF's ReduceJoin).
    moved = np.transpose(x, kept + axes[::-1]) if rank else x
    lead = [x.shape[i] for i in kept]
    joined = int(np.prod([x.shape[i] for i in axes], dtype=np.int64))
    sep = _b(attrs.get("separator", ""))
    out = np.empty(lead, dtype=object)
    flat, src = out.reshape(-1), moved.reshape(out.size, joined)
    for i in range(flat.size):
        flat[i] = sep.join(_b(v) for v in src[i])
    if attrs.get("keep_dims", False):
        out = out.reshape([1 if i in axes else d for i, d in enumerate(x.shape)])
    return out


@reference("Substr")
def _substr(attrs, strings, pos, length):
    x, p, n = _array(strings), np.asarray(pos), np.asarray(length)
    shape = np.broadcast(x, p, n).shape
    out = np.empty(shape, dtype=object)
    flat = out.reshape(-1)
    for i, (s, a, m) in enumerate(zip(*(np.broadcast_to(v, shape).reshape(-1) for v in (x, p, n)))):
        s, a, m = _b(s), int(a), int(m)
        start = a + len(s) if a < 0 else a
        if not 0 <= start <= len(s):
            raise _bad(f"pos {a} out of range for string b'{s.decode(errors='replace')}' at "
                       f"index {i}")
        flat[i] = s[start:start + max(m, 0)]
    return out


@reference("StringStrip")
def _string_strip(attrs, strings):
    x = _array(strings)
    out = np.empty(x.shape, dtype=object)
    out.reshape(-1)[:] = [_b(v).strip(_ASCII_SPACE) for v in x.reshape(-1)]
    return out


@reference("StringLength")
def _string_length(attrs, strings):
    x = _array(strings)
    chars = attrs.get("unit", "BYTE") == "UTF8_CHAR"
    # UTF-8 characters: the bytes that do not continue one (TF counts them so).
    lens = [sum(1 for c in _b(v) if c & 0xC0 != 0x80) if chars else len(_b(v))
            for v in x.reshape(-1)]
    return np.asarray(lens, np.int32).reshape(x.shape)


def _rewrite(rewrite):
    r"""RE2's rewrite string in Python's: \0 is the whole match (\g<0>), \\ a backslash."""
    return re.sub(rb"\\(\d)", lambda m: b"\\g<" + m.group(1) + b">", rewrite)


@reference("RegexReplace")
def _regex_replace(attrs, strings, pattern, rewrite):
    try:
        rx = re.compile(_scalar(pattern, "pattern"))
    except re.error as e:
        raise _bad(f"Invalid pattern: {e}") from None
    rewrite = _rewrite(_scalar(rewrite, "rewrite"))
    count = 0 if attrs.get("replace_global", True) else 1
    x = _array(strings)
    out = np.empty(x.shape, dtype=object)
    out.reshape(-1)[:] = [rx.sub(rewrite, _b(v), count=count) for v in x.reshape(-1)]
    return out
