"""Reference semantics of the n-d indexing ops: GatherNd, ScatterNd and the
TensorScatter{Update,Add,Sub} family. ``indices[..., :K]`` address the first K dimensions
of the indexed tensor; each index picks a slice of the remaining dimensions."""
from __future__ import annotations

import numpy as np

from dtf.framework import errors
from .table import reference


def _flat_index(indices, shape, what):
    """The index rows of ``indices`` (shape [N, K]) as a tuple of K arrays, after checking
    that each one lies inside ``shape``; InvalidArgumentError names the first that does not."""
    indices = np.asarray(indices)
    k = indices.shape[-1] if indices.ndim else 0
    if indices.ndim == 0 or k > len(shape):
        raise errors.InvalidArgumentError(
            None, None, f"index innermost dimension length must be <= {what} rank; saw: "
            f"{k} vs. {len(shape)}")
    rows = indices.reshape(int(np.prod(indices.shape[:-1], dtype=np.int64)), k)
    bad = np.any((rows < 0) | (rows >= np.asarray(shape[:k], dtype=np.int64)), axis=1)
    if bad.any():
        i = int(np.argmax(bad))
        raise errors.InvalidArgumentError(
            None, None, f"indices[{i}] = [{', '.join(str(int(v)) for v in rows[i])}] does not index "
            f"into {what} shape [{','.join(str(d) for d in shape)}]")
    return tuple(rows.T), rows.shape[0], k


@reference("GatherNd", host=True)
def _gather_nd(attrs, params, indices):
    index, n, k = _flat_index(indices, params.shape, "param")
    if k == 0:
        picked = np.broadcast_to(params, (n,) + params.shape)
    else:
        picked = params[index]
    return np.ascontiguousarray(picked).reshape(indices.shape[:-1] + params.shape[k:])


def _updates_for(updates, indices, shape, k, n):
    want = tuple(indices.shape[:-1]) + tuple(shape[k:])
    if tuple(updates.shape) != want:
        raise errors.InvalidArgumentError(
            None, None, f"updates must have shape indices.shape[:-1] + shape[{k}:] = "
            f"{list(want)}, got {list(updates.shape)}")
    return updates.reshape((n,) + tuple(shape[k:]))


def _scatter_into(out, indices, updates, what, combine):
    index, n, k = _flat_index(indices, out.shape, what)
    rows = _updates_for(updates, np.asarray(indices), out.shape, k, n)
    if k == 0:  # every update addresses the whole tensor
        for r in rows:
            out[...] = r if combine is None else combine(out, r)
        return out
    if combine is None:
        out[index] = rows
    else:
        combine.at(out, index, rows)
    return out


@reference("ScatterNd", host=True)
def _scatter_nd(attrs, indices, updates, shape):
    dims = [int(d) for d in np.asarray(shape).reshape(-1)]
    out = np.zeros(dims, dtype=updates.dtype)
    return _scatter_into(out, indices, updates, "output", np.add)


for _op, _combine in (("TensorScatterUpdate", None), ("TensorScatterAdd", np.add),
                      ("TensorScatterSub", np.subtract)):
    reference(_op, host=True)(lambda attrs, tensor, indices, updates, _c=_combine:
                   _scatter_into(np.array(tensor, copy=True), indices, updates, "tensor", _c))
