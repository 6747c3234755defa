"""Reference semantics: SparseReshape, SparseAdd (+ SparseAddGrad), SparseTensorDenseAdd and
SparseConcat (dtf/ops/sparse_combine_ops.py). Index sets are merged with one lexsort rather
than TF's two-pointer walk: for inputs in canonical order (what TF requires) the output is
the same, and sorted."""
from __future__ import annotations

import numpy as np

from dtf.framework import errors

from .table import reference


def _bad(message):
    return errors.InvalidArgumentError(None, None, message)


def _matrix(indices, what):
    idx = np.asarray(indices, dtype=np.int64)
    if idx.ndim != 2:
        raise _bad(f"{what} must be a matrix, got shape {list(idx.shape)}")
    return idx


def _row_order(idx, *tie_breaks):
    """The permutation sorting rows of ``idx`` lexicographically (ties by ``tie_breaks``)."""
    keys = list(tie_breaks) + [idx[:, k] for k in reversed(range(idx.shape[1]))]
    return np.lexsort(keys) if keys and len(idx) else np.arange(len(idx))


@reference("SparseReshape", host=True)
def _sparse_reshape(attrs, indices, input_shape, new_shape):
    idx = _matrix(indices, "Input indices")
    in_shape = np.asarray(input_shape, np.int64).reshape(-1)
    wanted = np.asarray(new_shape, np.int64).reshape(-1)
    if idx.shape[1] != in_shape.size:
        raise _bad(f"Input shape should be a vector of {idx.shape[1]} dims (the indices' "
                   f"columns), got {list(in_shape)}")
    size = int(np.prod(in_shape, dtype=np.int64))
    out = wanted.copy()
    implied = -1
    for i, d in enumerate(wanted):
        if d == -1:
            if implied >= 0:
                raise _bad(f"only one output dimension may be -1, not both {implied} and {i}")
            implied = i
        elif d < 0:
            raise _bad(f"Size {i} must be non-negative, not {int(d)}")
    known = int(np.prod([d for d in wanted if d != -1], dtype=np.int64))
    if implied >= 0:
        if known == 0 or size % known:
            raise _bad(f"Input to reshape is a SparseTensor with {size} dense values, but the "
                       f"requested shape requires a multiple of {known}")
        out[implied] = size // known
    elif known != size:
        raise _bad(f"Input to reshape is a tensor with {size} dense values, but the requested "
                   f"shape has {known}")
    if not idx.size or not in_shape.size:
        return np.zeros((idx.shape[0], out.size), np.int64), out
    if np.any(idx < 0) or np.any(idx >= in_shape):
        raise _bad("Input indices are out of bounds of the input shape "
                   f"{list(in_shape)}")
    flat = np.ravel_multi_index(tuple(idx.T), tuple(int(d) for d in in_shape))
    new_idx = np.stack(np.unravel_index(flat, tuple(int(d) for d in out)), axis=1)
    return new_idx.astype(np.int64).reshape(idx.shape[0], out.size), out


def _same_shapes(a_shape, b_shape):
    a_shape, b_shape = (np.asarray(s, np.int64).reshape(-1) for s in (a_shape, b_shape))
    if a_shape.size != b_shape.size:
        raise _bad(f"Operands do not have the same ranks; got shapes: {list(a_shape)} and "
                   f"{list(b_shape)}")
    for d, (x, y) in enumerate(zip(a_shape, b_shape)):
        if x != y:
            raise _bad(f"Operands' shapes do not match: got {int(x)} and {int(y)} for "
                       f"dimension {d}")
    return a_shape


@reference("SparseAdd", host=True)
def _sparse_add(attrs, a_indices, a_values, a_shape, b_indices, b_values, b_shape, thresh):
    ai, bi = _matrix(a_indices, "a_indices"), _matrix(b_indices, "b_indices")
    shape = _same_shapes(a_shape, b_shape)
    if np.ndim(thresh) != 0:
        raise _bad(f"The magnitude threshold must be a scalar, got shape {list(np.shape(thresh))}")
    for what, i, v in (("a", ai, a_values), ("b", bi, b_values)):
        if v.ndim != 1 or v.shape[0] != i.shape[0]:
            raise _bad(f"{what}_values must be a vector as long as {what}_indices has rows, "
                       f"got {list(v.shape)} for {list(i.shape)}")
    idx = np.concatenate([ai, bi]).reshape(-1, shape.size)
    vals = np.concatenate([a_values, b_values])
    src = np.concatenate([np.zeros(len(ai), np.int8), np.ones(len(bi), np.int8)])
    order = _row_order(idx, src)
    idx, vals, src = idx[order], vals[order].copy(), src[order]
    # An a entry directly followed by a b entry at the same index: the pair is summed into
    # the a slot, the b slot is dropped, and the sum too when it is below thresh.
    pair = np.zeros(len(idx), bool)
    if len(idx) > 1:
        pair[:-1] = (np.all(idx[1:] == idx[:-1], axis=1) & (src[:-1] == 0) & (src[1:] == 1))
    where = np.flatnonzero(pair)
    vals[where] = vals[where] + vals[where + 1]
    keep = np.ones(len(idx), bool)
    keep[where + 1] = False
    keep[where[np.abs(vals[where]) < thresh]] = False
    return idx[keep], vals[keep], shape


@reference("SparseAddGrad", host=True)
def _sparse_add_grad(attrs, grad, a_indices, b_indices, sum_indices):
    at = {tuple(r): k for k, r in enumerate(_matrix(sum_indices, "sum_indices").tolist())}
    out = []
    for what, idx in (("a", a_indices), ("b", b_indices)):
        rows = _matrix(idx, f"{what}_indices").tolist()
        picked = np.zeros(len(rows), grad.dtype)
        for k, r in enumerate(rows):
            j = at.get(tuple(r))
            if j is not None:
                picked[k] = grad[j]
        out.append(picked)
    return tuple(out)


@reference("SparseTensorDenseAdd", host=True)
def _sparse_tensor_dense_add(attrs, a_indices, a_values, a_shape, b):
    idx = _matrix(a_indices, "a_indices")
    shape = np.asarray(a_shape, np.int64).reshape(-1)
    if tuple(shape) != tuple(b.shape):
        raise _bad(f"Dimension mismatch: a_shape {list(shape)} and b.shape {list(b.shape)} do "
                   "not match")
    if np.any(idx < 0) or np.any(idx >= shape):
        raise _bad(f"a_indices are out of bounds of a_shape {list(shape)}")
    out = np.array(b, copy=True)
    np.add.at(out, tuple(idx.T), a_values)
    return out


@reference("SparseConcat", host=True)
def _sparse_concat(attrs, *inputs):
    n = int(attrs["N"])
    indices, values, shapes = inputs[:n], inputs[n:2 * n], inputs[2 * n:]
    shapes = [np.asarray(s, np.int64).reshape(-1) for s in shapes]
    rank = shapes[0].size
    axis = int(attrs["concat_dim"])
    if not -rank <= axis < rank:
        raise _bad(f"Concat dimension must be in range [{-rank}, {rank}), got {axis}")
    axis %= rank
    for pos, s in enumerate(shapes[1:], 1):
        if s.size != rank:
            raise _bad(f"Ranks of all input tensors must match: expected {rank} but got "
                       f"{s.size} at position {pos}")
        for d in range(rank):
            if d != axis and s[d] != shapes[0][d]:
                raise _bad(f"Input shapes must match: expected {int(shapes[0][d])} for "
                           f"dimension {d} but got {int(s[d])} at position {pos}")
    offset, parts = 0, []
    for pos, (i, s) in enumerate(zip(indices, shapes)):
        i = _matrix(i, f"indices[{pos}]").reshape(-1, rank).copy()
        i[:, axis] += offset
        offset += int(s[axis])
        parts.append(i)
    idx = np.concatenate(parts)
    vals = np.concatenate([np.asarray(v).reshape(-1) for v in values])
    out_shape = shapes[0].copy()
    out_shape[axis] = offset
    order = _row_order(idx, np.arange(len(idx)))  # stable among equal rows
    return idx[order], vals[order], out_shape
