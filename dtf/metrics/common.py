"""What every streaming metric shares: its local accumulator variables, the shape rules for
labels/predictions/weights, and the collections its value and update op join.

A metric returns (value, update_op): update_op adds one batch into the accumulators (in
LOCAL_VARIABLES and METRIC_VARIABLES, so local_variables_initializer resets them) and
returns the metric over everything seen so far; value reads the accumulators only.
"""
from __future__ import annotations

from dtf.framework import ops as _ops
from dtf.framework.ops import GraphKeys
from dtf.ops import array_ops, math_ops
from dtf.ops.common import convert
from dtf.ops.variables import Variable
from dtf.ops.weights_broadcast_ops import remove_squeezable_dimensions, reshape_last_dim


def metric_variable(shape, dtype, validate_shape=True, name=None):
    """A zero-initialized, untrained accumulator in LOCAL_VARIABLES and METRIC_VARIABLES."""
    return Variable(lambda: array_ops.zeros(shape, dtype), trainable=False,
                    collections=[GraphKeys.LOCAL_VARIABLES, GraphKeys.METRIC_VARIABLES],
                    validate_shape=validate_shape, name=name)


def add_to(collections, tensor):
    """Adds ``tensor`` to each of ``collections`` (a metric's metrics/updates_collections)."""
    if collections:
        _ops.add_to_collections(collections, tensor)
    return tensor


def read_variable(v, collections):
    """A metric's value that is just an accumulator: an Identity of it, as TF returns."""
    return add_to(collections, array_ops.identity(v))


def remove_squeezable(predictions, labels, weights):
    """Predictions and labels made the same rank, then weights the same rank as
    predictions (a trailing 1 squeezed or added); scalar weights stay scalar."""
    predictions = convert(predictions, "predictions")
    if labels is not None:
        labels, predictions = remove_squeezable_dimensions(labels, predictions)
        predictions.shape.assert_is_compatible_with(labels.shape)
    if weights is None:
        return predictions, labels, None
    weights = convert(weights, "weights")
    w_rank, p_rank = weights.shape.ndims, predictions.shape.ndims
    if w_rank == 0:
        return predictions, labels, weights
    if p_rank is not None and w_rank is not None:
        if w_rank - p_rank == 1:
            weights = array_ops.squeeze(weights, [-1])
        elif p_rank - w_rank == 1:
            weights = array_ops.expand_dims(weights, -1)
        return predictions, labels, weights
    w_rank_t = array_ops.rank(weights)
    rank_diff = w_rank_t - array_ops.rank(predictions)
    not_scalar = math_ops.not_equal(w_rank_t, 0)
    squeeze = math_ops.logical_and(not_scalar, math_ops.equal(rank_diff, 1))
    w_dims = weights.shape.as_tuple_or_none()
    if w_dims is not None and w_dims[-1] not in (None, 1):
        squeeze = math_ops.logical_and(squeeze, False)  # TF never squeezes such weights
    expand = math_ops.logical_and(not_scalar, math_ops.equal(rank_diff, -1))
    return predictions, labels, reshape_last_dim(weights, squeeze, expand)
