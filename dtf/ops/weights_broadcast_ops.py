"""Shape rules shared by tf.losses and tf.metrics: weights that broadcast to values, and
labels/predictions/weights whose ranks differ by a trailing dimension of size 1.

TF checks weights against values statically where shapes are known and adds an Assert op
otherwise. dtf has no Assert op yet, so only the static check runs; with unknown shapes a
weights tensor of the wrong shape fails later, in the Mul that applies it.
"""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from . import array_ops, math_ops
from .common import convert

_NOT_BROADCASTABLE = "weights can not be broadcast to values."


def check_broadcastable(weights, values):
    """Raises ValueError when ``weights`` statically cannot be broadcast to ``values``:
    weights are a scalar, or have values' rank with each dimension 1 or values' size."""
    w_dims = weights.shape.as_tuple_or_none()
    v_dims = values.shape.as_tuple_or_none()
    if w_dims is None or v_dims is None or len(w_dims) == 0:
        return
    if len(w_dims) != len(v_dims):
        raise ValueError(f"{_NOT_BROADCASTABLE} values.rank={len(v_dims)}. "
                         f"weights.rank={len(w_dims)}. values.shape={values.shape}. "
                         f"weights.shape={weights.shape}. Received weights={weights}, "
                         f"values={values}")
    if None in w_dims or None in v_dims:
        return
    for i, (w, v) in enumerate(zip(w_dims, v_dims)):
        if w not in (1, v):
            raise ValueError(f"{_NOT_BROADCASTABLE} Mismatch at dim {i}. values.shape="
                             f"{list(v_dims)}, weights.shape={list(w_dims)}. Received "
                             f"weights={weights}, values={values}")


def broadcast_weights(weights, values):
    """``weights`` broadcast to the shape of ``values`` (weights * ones_like(values))."""
    with _ops.name_scope(None, "broadcast_weights", (weights, values)) as scope:
        values = convert(values, "values")
        weights = convert(weights, "weights", dtype=values.dtype.base_dtype)
        ws, vs = weights.shape, values.shape
        if ws.is_fully_defined() and vs.is_fully_defined() and ws.is_compatible_with(vs):
            return weights
        check_broadcastable(weights, values)
        return math_ops.multiply(weights, array_ops.ones_like(values), name=scope)


def _last_dim_may_be_one(t):
    dims = t.shape.as_tuple_or_none()
    return dims is None or (len(dims) > 0 and dims[-1] in (None, 1))


def reshape_last_dim(x, squeeze, expand=None):
    """x without its last dimension where the scalar bool tensor ``squeeze`` holds, or with
    a trailing 1 where ``expand`` holds, else x: TF's cond(squeeze(x, [-1]), x) as a Reshape
    to a computed shape, so no control-flow op is needed (a last dimension other than 1
    fails in the Reshape, as TF's squeeze would)."""
    drop = math_ops.cast(squeeze, dtypes.int32)
    kept = array_ops.slice(array_ops.shape(x), [0],
                           array_ops.reshape(array_ops.rank(x) - drop, [1]))
    if expand is not None:
        ones = array_ops.fill(array_ops.reshape(math_ops.cast(expand, dtypes.int32), [1]), 1)
        kept = array_ops.concat([kept, ones], 0)
    return array_ops.reshape(x, kept)


def squeeze_last_if(x, condition):
    """x without its last dimension where ``condition`` holds (see reshape_last_dim)."""
    return reshape_last_dim(x, condition)


def remove_squeezable_dimensions(labels, predictions, expected_rank_diff=0, name=None):
    """Squeezes the last dimension of labels or predictions when their ranks differ from
    ``expected_rank_diff`` by exactly one (TF's confusion_matrix helper)."""
    with _ops.name_scope(name, "remove_squeezable_dimensions", [labels, predictions]):
        predictions = convert(predictions, "predictions")
        labels = convert(labels, "labels")
        p_rank, l_rank = predictions.shape.ndims, labels.shape.ndims
        if p_rank is not None and l_rank is not None:
            rank_diff = p_rank - l_rank
            if rank_diff == expected_rank_diff + 1 and _last_dim_may_be_one(predictions):
                predictions = array_ops.squeeze(predictions, [-1])
            elif rank_diff == expected_rank_diff - 1 and _last_dim_may_be_one(labels):
                labels = array_ops.squeeze(labels, [-1])
            return labels, predictions
        rank_diff = array_ops.rank(predictions) - array_ops.rank(labels)
        if _last_dim_may_be_one(predictions):
            predictions = squeeze_last_if(
                predictions, math_ops.equal(expected_rank_diff + 1, rank_diff))
        if _last_dim_may_be_one(labels):
            labels = squeeze_last_if(labels, math_ops.equal(expected_rank_diff - 1, rank_diff))
        return labels, predictions
