"""Reference semantics: row updates (Scatter*, ScatterNd*, SparseApply*), SparseToDense,
SparseReorder and ParallelDynamicStitch.

The row updates are written as in-place routines over arrays (``scatter_into``,
``sparse_apply_into``); the reference entries apply them to copies, the CPU kernels
(dtf/kernels/cpu/scatter.py) to the variable's own array under its lock.
"""
from __future__ import annotations

import numpy as np

from dtf.framework import errors

from . import segment  # noqa: F401  (DynamicStitch's reference, shared)
from .table import REFERENCE, reference


def check_indices(indices, limit, style="scatter"):
    """Every index in [0, limit); the error names the first one that is not, as TF does."""
    flat = np.asarray(indices).reshape(-1)
    bad = (flat < 0) | (flat >= limit)
    if bad.any():
        i = int(np.argmax(bad))
        if style == "scatter":
            msg = f"indices[{i}] = {int(flat[i])} is not in [0, {limit})"
        else:
            msg = f"Index {int(flat[i])} at offset {i} in indices is out of range"
        raise errors.InvalidArgumentError(None, None, msg)
    return flat


def _trunc_divide(a, b):
    return np.trunc(a / b).astype(a.dtype) if a.dtype.kind in "iu" else a / b


# op type -> how a row combines with its update (np.ufunc.at handles repeated indices).
_COMBINE = {"ScatterAdd": np.add, "ScatterSub": np.subtract, "ScatterMul": np.multiply,
            "ScatterMin": np.minimum, "ScatterMax": np.maximum}


def scatter_into(op_type, var, indices, updates):
    """Applies a Scatter* op to ``var`` in place."""
    if not var.ndim:
        raise errors.InvalidArgumentError(None, None, "params must be at least 1-D, got shape []")
    flat = check_indices(indices, var.shape[0])
    want = np.shape(indices) + var.shape[1:]
    if updates.ndim and updates.shape != want:
        raise errors.InvalidArgumentError(
            None, None, "Must have updates.shape = indices.shape + params.shape[1:] or "
            f"updates.shape = [], got updates.shape {list(updates.shape)}, indices.shape "
            f"{list(np.shape(indices))}, params.shape {list(var.shape)}")
    rows = np.broadcast_to(updates, want).reshape((flat.size,) + var.shape[1:])
    if op_type == "ScatterUpdate":
        var[flat] = rows  # a repeated index: the last update wins (TF's CPU order)
    elif op_type == "ScatterDiv":
        for i, r in enumerate(flat):  # sequential, so repeated indices divide repeatedly
            var[r] = _trunc_divide(var[r], rows[i])
    else:
        combine_rows(_COMBINE[op_type], var, flat, rows)
    return var


def combine_rows(ufunc, var, flat, rows):
    """``ufunc.at(var, flat, rows)``, bitwise the same, in a few whole-row operations.

    ufunc.at takes about 1 us per row (183 us for 192 rows of 128 floats, a word2vec
    update of one table shard); indexing whole rows takes about 10 us. Repeated indices
    keep ufunc.at's order: the k-th occurrences of all indices go in one operation (they
    are distinct rows) after the (k-1)-th, so each row sees its updates in input order."""
    if flat.size < 2 or rows.dtype != var.dtype:
        ufunc.at(var, flat, rows)
        return
    order = np.argsort(flat, kind="stable")
    ordered = flat[order]
    first = np.empty(flat.size, bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    if first.all():  # no index repeats
        var[flat] = ufunc(var[flat], rows)
        return
    starts = np.flatnonzero(first)
    rank = np.empty(flat.size, np.intp)
    rank[order] = np.arange(flat.size) - starts[np.cumsum(first) - 1]
    for k in range(int(rank.max()) + 1):
        at = np.flatnonzero(rank == k)
        ids = flat[at]
        var[ids] = ufunc(var[ids], rows[at])


def _scatter_reference(op_type):
    def fn(attrs, var, indices, updates):
        return scatter_into(op_type, np.array(var), indices, updates)

    return fn


for _op in ("ScatterUpdate", "ScatterAdd", "ScatterSub", "ScatterMul", "ScatterDiv",
            "ScatterMin", "ScatterMax"):
    reference(_op)(_scatter_reference(_op))


def sparse_apply_into(dense_update, attrs, refs, args, indices_pos):
    """Applies a SparseApply op in place: ``dense_update`` (the dense op's formula, from
    dtf/kernels/cpu/state.py) on the named rows of every ref. ``args`` are the op's other
    inputs; ``indices_pos`` is where the indices sit among them (right after grad)."""
    var = refs[0]
    indices = np.asarray(args[indices_pos])
    grad = args[indices_pos - 1]
    dense_args = list(args[:indices_pos]) + list(args[indices_pos + 1:])
    grad_at = indices_pos - 1
    if indices.ndim != 1:
        raise errors.InvalidArgumentError(None, None, "indices must be one-dimensional")
    if var.ndim < 1 or grad.ndim < 1 or grad.shape[1:] != var.shape[1:]:
        raise errors.InvalidArgumentError(
            None, None, f"var and grad must match in dimension 1 and up: var shape "
            f"{list(var.shape)}, grad shape {list(grad.shape)}")
    if grad.shape[0] != indices.shape[0]:
        raise errors.InvalidArgumentError(
            None, None, "grad must be the same size as indices in the first dimension.")
    for i, a in enumerate(dense_args):
        if i != grad_at and np.ndim(a):
            raise errors.InvalidArgumentError(None, None, f"argument {i} is not a scalar: "
                                                          f"{list(np.shape(a))}")
    check_indices(indices, var.shape[0], style="sparse_apply")
    dt = var.dtype
    dense_args = [np.asarray(a, dtype=dt) for a in dense_args]
    if np.unique(indices).size == indices.size:
        groups = [(indices, slice(None))]
    else:  # a repeated row is updated once per occurrence, in order, as TF's kernel does
        groups = [(indices[i:i + 1], slice(i, i + 1)) for i in range(indices.size)]
    for rows, picked in groups:
        dense_args[grad_at] = grad[picked]
        news = dense_update(attrs, *[r[rows] for r in refs], *dense_args)
        for r, new in zip(refs, news):
            r[rows] = new
    return refs


# -- routing rows ------------------------------------------------------------------------
# ParallelDynamicStitch is DynamicStitch under the op type embedding_lookup builds.
reference("ParallelDynamicStitch", host=True)(REFERENCE["DynamicStitch"])


def _sparse_apply_reference(op_type):
    def fn(attrs, *inputs):
        from dtf.kernels.cpu.state import UPDATES  # the dense formulas, shared
        from dtf.ops.scatter_ops import SPARSE_APPLY_OPS, sparse_arg_names

        refs_names, arg_names = sparse_arg_names(SPARSE_APPLY_OPS[op_type])
        n = len(refs_names)
        refs = [np.array(r) for r in inputs[:n]]
        out = sparse_apply_into(UPDATES[SPARSE_APPLY_OPS[op_type]], attrs, refs,
                                list(inputs[n:]), arg_names.index("indices"))
        return tuple(out)

    return fn


def _register_sparse_apply_references():
    from dtf.ops.scatter_ops import SPARSE_APPLY_OPS

    for op_type in SPARSE_APPLY_OPS:
        reference(op_type)(_sparse_apply_reference(op_type))


_register_sparse_apply_references()


# -- sparse tensors ----------------------------------------------------------------------
def _index_text(row):
    return "[" + ",".join(str(int(v)) for v in row) + "]"


def _check_sparse_order(idx, shape, validate):
    """Every index inside ``shape``; with ``validate`` also sorted and distinct (TF's
    SparseToDense rule), errors naming the first index that is not."""
    for i, row in enumerate(idx):
        if np.any(row < 0) or np.any(row >= shape):
            raise errors.InvalidArgumentError(
                None, None, f"indices[{i}] = {_index_text(row)} is out of bounds: need 0 <= "
                f"index < {_index_text(shape)}")
        if validate and i:
            prev = tuple(int(v) for v in idx[i - 1])
            here = tuple(int(v) for v in row)
            if here == prev:
                raise errors.InvalidArgumentError(
                    None, None, f"indices[{i}] = {_index_text(row)} is repeated")
            if here < prev:
                raise errors.InvalidArgumentError(
                    None, None, f"indices[{i}] = {_index_text(row)} is out of order. Many "
                    "sparse ops require sorted indices. Use `tf.sparse.reorder` to create a "
                    "correctly ordered copy.")


@reference("SparseToDense", host=True)
def _sparse_to_dense(attrs, indices, output_shape, values, default_value):
    shape = np.asarray(output_shape).reshape(-1).astype(np.int64)
    idx = np.asarray(indices)
    idx = idx.reshape(1, -1) if idx.ndim == 0 else (idx.reshape(-1, 1) if idx.ndim == 1 else idx)
    n = idx.shape[0]
    if idx.shape[1] != shape.size:
        raise errors.InvalidArgumentError(
            None, None, f"sparse_indices should have {shape.size} columns (the output rank), "
            f"got shape {list(np.shape(indices))}")
    if values.ndim not in (0, 1) or (values.ndim == 1 and values.shape[0] != n):
        raise errors.InvalidArgumentError(
            None, None, f"sparse_values has incorrect shape {list(values.shape)}, should be [] "
            f"or [{n}]")
    _check_sparse_order(idx, shape, attrs.get("validate_indices", True))
    out = np.full(tuple(int(d) for d in shape), default_value, dtype=values.dtype)
    if n:
        out[tuple(idx.T)] = np.broadcast_to(values, (n,))
    return out


def scatter_nd_into(op_type, var, indices, updates):
    """Applies a ScatterNd* op to ``var`` in place: each index names a slice of var's
    leading dims; the rows of a flat view of var are scattered as by scatter_into."""
    indices = np.asarray(indices)
    k = indices.shape[-1] if indices.ndim else 0
    if indices.ndim < 1 or k > var.ndim:
        raise errors.InvalidArgumentError(
            None, None, f"indices.shape[-1] must be <= params.dims, got indices shape "
            f"{list(indices.shape)} for params shape {list(var.shape)}")
    batch = indices.shape[:-1]
    want = batch + var.shape[k:]
    if updates.shape != want:
        raise errors.InvalidArgumentError(
            None, None, f"Must have updates.shape = indices.shape[:batch_dim] + "
            f"params_shape[slice_dim:], got updates.shape: {list(updates.shape)}, indices.shape: "
            f"{list(indices.shape)}, params_shape: {list(var.shape)}")
    flat_idx = indices.reshape(-1, k)
    lead = var.shape[:k]
    for i, row in enumerate(flat_idx):
        if np.any(row < 0) or np.any(row >= lead):
            raise errors.InvalidArgumentError(
                None, None, f"indices[{i}] = {_index_text(row)} does not index into param "
                f"shape {_index_text(var.shape)}")
    rows = np.ravel_multi_index(tuple(flat_idx.T), lead) if k else np.zeros(len(flat_idx), int)
    view = var.reshape((int(np.prod(lead)),) + var.shape[k:])  # a view: var changes with it
    plain = {"ScatterNdUpdate": "ScatterUpdate", "ScatterNdAdd": "ScatterAdd",
             "ScatterNdSub": "ScatterSub"}[op_type]
    scatter_into(plain, view, rows, updates.reshape((rows.size,) + var.shape[k:]))
    return var


def _scatter_nd_reference(op_type):
    def fn(attrs, var, indices, updates):
        return scatter_nd_into(op_type, np.array(var), indices, updates)

    return fn


for _op in ("ScatterNdUpdate", "ScatterNdAdd", "ScatterNdSub"):
    reference(_op)(_scatter_nd_reference(_op))


@reference("SparseReorder", host=True)
def _sparse_reorder(attrs, indices, values, dense_shape):
    indices = np.asarray(indices)
    if indices.ndim != 2 or values.ndim != 1 or indices.shape[0] != values.shape[0]:
        raise errors.InvalidArgumentError(
            None, None, f"Input indices should be a matrix and values a vector of as many "
            f"entries, got {list(indices.shape)} and {list(values.shape)}")
    order = np.lexsort(indices.T[::-1]) if indices.size else np.arange(0)
    return indices[order].astype(np.int64), values[order]
