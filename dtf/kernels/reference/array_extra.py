"""Reference semantics of Bincount, HistogramFixedWidth, ListDiff (setdiff1d), UnravelIndex, LowerBound and
UpperBound (searchsorted), BroadcastArgs and EnsureShape."""
from __future__ import annotations

import numpy as np

from dtf.framework import errors
from .table import reference


def _invalid(msg):
    return errors.InvalidArgumentError(None, None, msg)


@reference("Bincount", host=True)
def _bincount(attrs, arr, size, weights):
    n = int(size)
    if n < 0:
        raise _invalid(f"size ({n}) must be non-negative")
    flat = np.asarray(arr).reshape(-1)
    if (flat < 0).any():
        raise _invalid(f"Input arr must be non-negative, got {int(flat[flat < 0][0])}")
    keep = flat < n  # TF drops values >= size
    dtype = attrs["T"].as_numpy_dtype
    w = np.asarray(weights).reshape(-1)
    if w.size:
        if w.size != flat.size:
            raise _invalid(f"weights must be empty or the shape of arr, got {w.size} for {flat.size}")
        return np.bincount(flat[keep], w[keep].astype(np.float64), minlength=n)[:n].astype(dtype)
    return np.bincount(flat[keep], minlength=n)[:n].astype(dtype)


@reference("ListDiff", host=True)
def _list_diff(attrs, x, y):
    keep = ~np.isin(x, y)
    idx = np.nonzero(keep)[0].astype(attrs["out_idx"].as_numpy_dtype)
    return x[keep], idx


@reference("UnravelIndex", host=True)
def _unravel_index(attrs, indices, dims):
    dims = np.asarray(dims).reshape(-1)
    total = int(np.prod(dims))
    flat = np.asarray(indices)
    if ((flat < 0) | (flat >= total)).any():
        raise _invalid(f"index out of bounds for dims {dims.tolist()}: {flat.reshape(-1).tolist()}")
    return np.asarray(np.unravel_index(flat, tuple(int(d) for d in dims)), dtype=flat.dtype)


def _bound(side):
    def run(attrs, sorted_inputs, values):
        if sorted_inputs.ndim != 2 or values.ndim != 2 or sorted_inputs.shape[0] != values.shape[0]:
            raise _invalid(f"sorted_inputs and values must be matrices with as many rows, got "
                           f"{list(sorted_inputs.shape)} and {list(values.shape)}")
        out = np.stack([np.searchsorted(s, v, side=side) for s, v in zip(sorted_inputs, values)]) \
            if values.shape[0] else np.zeros(values.shape, np.int64)
        return out.reshape(values.shape).astype(attrs["out_type"].as_numpy_dtype)
    return run


reference("LowerBound", host=True)(_bound("left"))
reference("UpperBound", host=True)(_bound("right"))


@reference("BroadcastArgs", host=True)
def _broadcast_args(attrs, s0, s1):
    try:
        shape = np.broadcast_shapes(tuple(int(d) for d in s0), tuple(int(d) for d in s1))
    except ValueError:
        raise _invalid(f"Incompatible shapes: {list(s0)} vs. {list(s1)}") from None
    return np.asarray(shape, dtype=np.asarray(s0).dtype)


@reference("EnsureShape", host=True)
def _ensure_shape(attrs, x):
    want = attrs["shape"]
    fits = want is None or (len(want) == x.ndim and all(w in (None, -1, d) for w, d in zip(want, x.shape)))
    if not fits:
        shown = "[" + ",".join("?" if w in (None, -1) else str(w) for w in want) + "]"
        raise _invalid(f"Shape of tensor {attrs.get('_input_name', 'x')} {list(x.shape)} is not "
                       f"compatible with expected shape {shown}.")
    return x


@reference("HistogramFixedWidth", host=True)
def _histogram_fixed_width(attrs, values, value_range, nbins):
    n = int(nbins)
    lo, hi = (float(v) for v in np.asarray(value_range).reshape(-1)[:2])
    if n <= 0 or not lo < hi:
        raise _invalid(f"nbins should be a positive number and value_range[0] < value_range[1], got "
                       f"{n} and [{lo}, {hi}]")
    scaled = (np.asarray(values, np.float64).reshape(-1) - lo) / (hi - lo) * n
    bins = np.clip(np.floor(scaled), 0, n - 1).astype(np.int64)  # outside the range: the end bins
    return np.bincount(bins, minlength=n).astype(attrs["dtype"].as_numpy_dtype)
