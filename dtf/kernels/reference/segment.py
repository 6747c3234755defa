"""Reference semantics of the segment reductions (sorted Segment* and UnsortedSegment*
other than the sum, which lives in ``array``), DynamicPartition and DynamicStitch."""
from __future__ import annotations

import numpy as np

from dtf.framework import errors
from .table import reference


def _extreme(dtype, high):
    """TF's identity of max (lowest finite value) and of min (highest finite value)."""
    info = np.finfo(dtype) if np.dtype(dtype).kind == "f" else np.iinfo(dtype)
    return info.max if high else info.min


def _reduce(data, ids, n, ufunc, initial):
    """ufunc-reduces the slices of ``data`` into ``n`` segments chosen by ``ids`` (whose
    shape is a prefix of data's); negative ids are dropped, ids >= n are an error."""
    ids = np.asarray(ids)
    if data.shape[:ids.ndim] != ids.shape:
        raise errors.InvalidArgumentError(
            None, None, f"data.shape = {list(data.shape)} does not start with segment_ids.shape "
            f"= {list(ids.shape)}")
    flat_ids = ids.reshape(-1)
    if (flat_ids >= n).any():
        raise errors.InvalidArgumentError(
            None, None, f"segment_ids {int(flat_ids[flat_ids >= n][0])} is out of range [0, {n})")
    flat = data.reshape((flat_ids.size,) + data.shape[ids.ndim:])
    out = np.full((n,) + flat.shape[1:], initial, dtype=data.dtype)
    keep = flat_ids >= 0
    ufunc.at(out, flat_ids[keep], flat[keep])
    counts = np.bincount(flat_ids[keep], minlength=n)[:n]
    return out, counts


_UNSORTED = {"UnsortedSegmentMax": (np.maximum, lambda d: _extreme(d, False)),
             "UnsortedSegmentMin": (np.minimum, lambda d: _extreme(d, True)),
             "UnsortedSegmentProd": (np.multiply, lambda d: 1)}
for _op, (_ufunc, _initial) in _UNSORTED.items():
    reference(_op, host=True)(lambda attrs, data, ids, num, _u=_ufunc, _i=_initial:
                   _reduce(data, ids, int(num), _u, _i(data.dtype))[0])


def _sorted_count(ids):
    """Number of output segments of a sorted segment op, after TF's checks on the ids."""
    ids = np.asarray(ids)
    if ids.ndim != 1:
        raise errors.InvalidArgumentError(None, None, f"segment_ids should be a vector, got shape "
                                          f"{list(ids.shape)}")
    if ids.size and ids[0] < 0:
        raise errors.InvalidArgumentError(None, None, f"segment ids must be >= 0, got {int(ids[0])}")
    if ids.size > 1 and (np.diff(ids) < 0).any():
        i = int(np.argmax(np.diff(ids) < 0)) + 1
        raise errors.InvalidArgumentError(
            None, None, f"segment ids are not increasing: segment_ids[{i}] = {int(ids[i])} follows "
            f"{int(ids[i - 1])}")
    return int(ids[-1]) + 1 if ids.size else 0


def _sorted(ufunc, initial_of, empty_is_zero):
    def run(attrs, data, ids):
        if data.ndim == 0 or data.shape[0] != np.size(ids):
            raise errors.InvalidArgumentError(
                None, None, f"segment_ids should be the same size as dimension 0 of input, got "
                f"{np.size(ids)} and data shape {list(data.shape)}")
        out, counts = _reduce(data, ids, _sorted_count(ids), ufunc, initial_of(data.dtype))
        if empty_is_zero:  # an empty segment's max/min is 0 in the sorted ops
            out[counts == 0] = 0
        return out
    return run


reference("SegmentSum", host=True)(_sorted(np.add, lambda d: 0, False))
reference("SegmentProd", host=True)(_sorted(np.multiply, lambda d: 1, False))
reference("SegmentMax", host=True)(_sorted(np.maximum, lambda d: _extreme(d, False), True))
reference("SegmentMin", host=True)(_sorted(np.minimum, lambda d: _extreme(d, True), True))


@reference("SegmentMean", host=True)
def _segment_mean(attrs, data, ids):
    total = _sorted(np.add, lambda d: 0, False)(attrs, data, ids)
    counts = np.bincount(np.asarray(ids).reshape(-1), minlength=total.shape[0])
    counts = np.maximum(counts, 1).reshape((-1,) + (1,) * (data.ndim - 1))
    # integer means truncate toward zero, as C++ division does in TF's kernel
    return (total / counts).astype(data.dtype)


@reference("DynamicPartition", host=True)
def _dynamic_partition(attrs, data, partitions):
    n = int(attrs["num_partitions"])
    partitions = np.asarray(partitions)
    if data.shape[:partitions.ndim] != partitions.shape:
        raise errors.InvalidArgumentError(
            None, None, f"data.shape must start with partitions.shape, got data.shape = "
            f"{list(data.shape)}, partitions.shape = {list(partitions.shape)}")
    bad = (partitions < 0) | (partitions >= n)
    if bad.any():
        pos = tuple(int(i) for i in np.argwhere(bad)[0])
        raise errors.InvalidArgumentError(
            None, None, f"partitions{list(pos)} = {int(partitions[pos])} is not in [0, {n})")
    flat_p = partitions.reshape(-1)
    flat = data.reshape((flat_p.size,) + data.shape[partitions.ndim:])
    return tuple(np.ascontiguousarray(flat[flat_p == i]) for i in range(n))


@reference("DynamicStitch", host=True)
def _dynamic_stitch(attrs, *args):
    n = len(args) // 2
    indices, data = [np.asarray(i) for i in args[:n]], args[n:]
    size = max((int(i.max()) + 1 for i in indices if i.size), default=0)
    inner = data[0].shape[indices[0].ndim:]
    out = np.zeros((size,) + tuple(inner), dtype=data[0].dtype)
    for k, (idx, d) in enumerate(zip(indices, data)):
        if d.shape[:idx.ndim] != idx.shape or d.shape[idx.ndim:] != inner:
            raise errors.InvalidArgumentError(
                None, None, f"data[{k}].shape = {list(d.shape)} does not start with indices[{k}]"
                f".shape = {list(idx.shape)} followed by {list(inner)}")
        if idx.size and idx.min() < 0:
            raise errors.InvalidArgumentError(None, None, f"indices[{k}] has a negative entry "
                                              f"{int(idx.min())}")
        out[idx.reshape(-1)] = d.reshape((idx.size,) + tuple(inner))
    return out
