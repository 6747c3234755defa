"""Reference semantics: reductions, argmax/argmin."""
from __future__ import annotations

import numpy as np

from .table import REFERENCE, reference  # noqa: F401


def _axes(x, axes):
    nd = x.ndim
    out = []
    for a in np.asarray(axes).reshape(-1):
        a = int(a)
        if a < -max(nd, 1) or a >= max(nd, 1):
            raise ValueError(f"Invalid reduction dimension {a} for input with {nd} dimensions")
        out.append(a % nd if nd else 0)
    return tuple(sorted(set(out))) if nd else None


def _reduce(np_fn, empty_ok=True):
    def run(attrs, x, axes):
        ax = _axes(x, axes)
        keep = attrs.get("keep_dims", False)
        if x.ndim == 0:
            return x.copy()
        if not empty_ok and x.size == 0:
            raise ValueError("Reduction of an empty tensor has no identity (max/min)")
        out = np_fn(x, axis=ax, keepdims=keep)
        return np.asarray(out).astype(x.dtype, copy=False)
    return run


def _mean(x, axis, keepdims):
    if x.dtype.kind in "iu":
        n = int(np.prod([x.shape[a] for a in axis])) if axis is not None else x.size
        s = np.sum(x, axis=axis, keepdims=keepdims)
        return (s // max(n, 1)) if n else s
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.mean(x, axis=axis, keepdims=keepdims, dtype=np.float64 if x.dtype == np.float16 else None)


for _op, _f, _ok in [("Sum", np.sum, True), ("Mean", _mean, True), ("Max", np.max, False),
                     ("Min", np.min, False), ("Prod", np.prod, True), ("Any", np.any, True),
                     ("All", np.all, True)]:
    REFERENCE[_op] = _reduce(_f, _ok)


def _arg(np_fn):
    def run(attrs, x, axis):
        a = int(axis)
        if a < -x.ndim or a >= x.ndim:
            raise ValueError(f"Expected dimension in the range [{-x.ndim}, {x.ndim}), but got {a}")
        if x.shape[a] == 0:
            raise ValueError("Reduction axis is empty in argmax/argmin")
        return np_fn(x, axis=a).astype(attrs["output_type"].as_numpy_dtype)
    return run


REFERENCE["ArgMax"] = _arg(np.argmax)
REFERENCE["ArgMin"] = _arg(np.argmin)


@reference("ReducedShape")
def _reduced_shape(attrs, shape, axes):
    out = np.array(shape, copy=True)
    n = out.size
    for a in np.asarray(axes).reshape(-1):
        out[int(a) % n] = 1
    return out


def _matmul(x, y, adj_x, adj_y):
    """np.matmul (BLAS) with optional transposes of the last two dims; the inner dims and
    batch dims are checked here because graph shapes may have been unknown."""
    if adj_x:
        x = np.swapaxes(x, -1, -2)
    if adj_y:
        y = np.swapaxes(y, -1, -2)
    if x.shape[-1] != y.shape[-2]:
        raise ValueError(f"Matrix size-incompatible: In[0]: {list(x.shape)}, In[1]: {list(y.shape)}")
    try:
        return np.matmul(x, y)
    except ValueError:
        raise ValueError(f"In[0] and In[1] must have compatible batch dimensions: "
                         f"{list(x.shape)} vs. {list(y.shape)}") from None


@reference("MatMul")
def _mat_mul(attrs, a, b):
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"In[0] and In[1] must be matrices: {list(a.shape)}, {list(b.shape)}")
    return _matmul(a, b, attrs["transpose_a"], attrs["transpose_b"])


@reference("BatchMatMulV2")
def _batch_mat_mul(attrs, x, y):
    if x.ndim < 2 or y.ndim < 2:
        raise ValueError(f"In[0] and In[1] must have rank >= 2: {list(x.shape)}, {list(y.shape)}")
    return _matmul(x, y, attrs["adj_x"], attrs["adj_y"])


def _scan(accumulate, identity, attrs, x, axis):
    """Cumsum / Cumprod with TF's ``exclusive`` and ``reverse``."""
    nd, a = x.ndim, int(np.asarray(axis))
    if not -nd <= a < nd:
        raise ValueError(f"axis {a} is out of range for a tensor of rank {nd}")
    a %= nd
    src = np.flip(x, a) if attrs.get("reverse") else x
    out = accumulate(src, axis=a, dtype=x.dtype)
    if attrs.get("exclusive"):
        shifted = np.empty_like(out)
        head, tail, body = ([slice(None)] * nd for _ in range(3))
        head[a], tail[a], body[a] = slice(0, 1), slice(1, None), slice(0, -1)
        shifted[tuple(head)] = identity
        shifted[tuple(tail)] = out[tuple(body)]
        out = shifted
    return np.ascontiguousarray(np.flip(out, a)) if attrs.get("reverse") else out


@reference("Cumsum", host=True)
def _cumsum(attrs, x, axis):
    return _scan(np.cumsum, 0, attrs, x, axis)


@reference("Cumprod", host=True)
def _cumprod(attrs, x, axis):
    return _scan(np.cumprod, 1, attrs, x, axis)
