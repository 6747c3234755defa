"""The weighted sums behind embedding_column and linear_model's categorical columns: TF's
``_safe_embedding_lookup_sparse`` (negative ids dropped, an example without ids gives zeros).

TF fills empty rows with id 0 and then zeroes them; summing per example with
unsorted_segment_sum over the batch size gives the same values directly, and the
gradient to the table stays an IndexedSlices of the looked-up rows (sparse optimizer
updates, as in TF)."""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.ops import array_ops, math_ops
from dtf.ops.slicing_ops import gather, unsorted_segment_sum


def add_to_collections(var, collections):
    for c in collections or ():
        if var not in _ops.get_collection(c):
            _ops.add_to_collection(c, var)


def safe_embedding_lookup_sparse(params, sp_ids, sp_weights=None, combiner="mean", name=None):
    """Per example (row of ``sp_ids``): the ``combiner`` ('sum', 'mean' or 'sqrtn') of the
    rows of ``params`` named by its ids, weighted by ``sp_weights``'s values when given."""
    if combiner not in ("sum", "mean", "sqrtn"):
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner!r}")
    with _ops.name_scope(name, "embedding_lookup", [params, sp_ids]):
        ids = math_ops.cast(sp_ids.values, dtypes.int64)
        rows = math_ops.cast(sp_ids.indices[:, 0], dtypes.int32)
        keep = math_ops.greater_equal(ids, 0)
        if sp_weights is not None:
            w = math_ops.cast(sp_weights.values, params.dtype)
            keep = math_ops.logical_and(keep, math_ops.greater(w, 0))
        kept = array_ops.reshape(math_ops.where(keep), [-1])
        ids = gather(ids, kept)
        rows = gather(rows, kept)
        batch = math_ops.cast(sp_ids.dense_shape[0], dtypes.int32)
        emb = gather(params, ids)
        if sp_weights is not None:
            w = gather(w, kept)
        else:
            w = array_ops.ones_like(ids, dtype=params.dtype)
        total = unsorted_segment_sum(emb * array_ops.expand_dims(w, 1), rows, batch)
        if combiner == "sum":
            return total
        if combiner == "mean":
            denom = unsorted_segment_sum(w, rows, batch)
        else:
            denom = math_ops.sqrt(unsorted_segment_sum(w * w, rows, batch))
        return math_ops.div_no_nan(total, array_ops.expand_dims(denom, 1))
