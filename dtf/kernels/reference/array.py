"""Reference semantics: array ops."""
from __future__ import annotations

import numpy as np

from .table import REFERENCE, reference  # noqa: F401


@reference("Shape")
def _shape(attrs, x):
    return np.asarray(x.shape, dtype=attrs.get("out_type").as_numpy_dtype if attrs.get("out_type") else np.int32)


@reference("Reshape")
def _reshape(attrs, x, shape):
    dims = [int(d) for d in np.asarray(shape).reshape(-1)]
    try:
        return x.reshape(dims)
    except ValueError:
        raise ValueError(f"Input to reshape is a tensor with {x.size} values, but the requested "
                         f"shape has {int(np.prod([d for d in dims if d >= 0]))}"
                         f" (requested shape {dims}, input shape {list(x.shape)})") from None


@reference("BroadcastGradientArgs")
def _bga(attrs, s0, s1):
    s0 = [int(d) for d in s0]
    s1 = [int(d) for d in s1]
    n = max(len(s0), len(s1))
    a = [1] * (n - len(s0)) + s0
    b = [1] * (n - len(s1)) + s1
    r0, r1 = [], []
    for i, (p, q) in enumerate(zip(a, b)):
        if p == q:
            if p == 1:
                r0.append(i)
                r1.append(i)
            continue
        if p == 1:
            r0.append(i)
        elif q == 1:
            r1.append(i)
        else:
            raise ValueError(f"Incompatible shapes: {s0} vs. {s1}")
    return np.asarray(r0, np.int32), np.asarray(r1, np.int32)


@reference("Fill")
def _fill(attrs, dims, value):
    if np.ndim(value) != 0:
        raise ValueError(f"value must be a scalar, got shape {list(np.shape(value))}")
    return np.full([int(d) for d in np.asarray(dims).reshape(-1)], value, dtype=value.dtype)


@reference("ZerosLike")
def _zeros_like(attrs, x):
    return np.zeros_like(x)


@reference("OnesLike")
def _ones_like(attrs, x):
    return np.ones_like(x)


@reference("BroadcastTo")
def _broadcast_to(attrs, x, shape):
    return np.broadcast_to(x, [int(d) for d in np.asarray(shape).reshape(-1)]).copy()
