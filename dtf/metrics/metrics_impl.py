"""Streaming means (mean, accuracy, the error metrics) and the boolean counts (true/false
positives/negatives) with precision and recall built on them."""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.ops import array_ops, math_ops, state_ops
from dtf.ops.reduction_ops import reduce_sum
from dtf.ops.variable_scope import variable_scope
from dtf.ops.weights_broadcast_ops import broadcast_weights
from .common import add_to, metric_variable, read_variable, remove_squeezable


def _weighted_sums(values, weights, total_shape):
    """(sum of values, sum of weights): reduce_sum'd for a scalar mean, elementwise for
    mean_tensor (``total_shape`` not None)."""
    if weights is None:
        if total_shape is None:
            return reduce_sum(values), math_ops.cast(array_ops.size(values), dtypes.float32)
        return values, array_ops.ones_like(values)
    values, _, weights = remove_squeezable(values, None, weights)
    weights = broadcast_weights(math_ops.cast(weights, dtypes.float32), values)
    values = math_ops.multiply(values, weights)
    if total_shape is None:
        return reduce_sum(values), reduce_sum(weights)
    return values, math_ops.multiply(array_ops.ones_like(values), weights)


def _mean(values, weights, metrics_collections, updates_collections, name, tensor=False):
    with variable_scope(name, "mean", (values, weights)):
        values = math_ops.cast(values, dtypes.float32)
        shape = values.shape if tensor else None
        total = metric_variable(shape if tensor else [], dtypes.float32,
                                name="total_tensor" if tensor else "total")
        count = metric_variable(shape if tensor else [], dtypes.float32,
                                name="count_tensor" if tensor else "count")
        batch_total, batch_count = _weighted_sums(values, weights, shape)
        update_total = state_ops.assign_add(total, batch_total)
        with _ops.control_dependencies([batch_total]):
            update_count = state_ops.assign_add(count, batch_count)
        value = math_ops.div_no_nan(total, math_ops.maximum(count, 0), name="value")
        add_to(metrics_collections, value)
        update_op = math_ops.div_no_nan(update_total, math_ops.maximum(update_count, 0),
                                        name="update_op")
        return value, add_to(updates_collections, update_op)


def mean(values, weights=None, metrics_collections=None, updates_collections=None, name=None):
    """The (weighted) mean of every value seen; variables ``mean/total`` and ``mean/count``."""
    return _mean(values, weights, metrics_collections, updates_collections, name)


def mean_tensor(values, weights=None, metrics_collections=None, updates_collections=None,
                name=None):
    """The elementwise (weighted) mean of every ``values`` tensor seen."""
    return _mean(values, weights, metrics_collections, updates_collections, name, tensor=True)


def accuracy(labels, predictions, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    """How often predictions equal labels."""
    predictions, labels, weights = remove_squeezable(predictions, labels, weights)
    predictions.shape.assert_is_compatible_with(labels.shape)
    if labels.dtype != predictions.dtype:
        predictions = math_ops.cast(predictions, labels.dtype)
    is_correct = math_ops.cast(math_ops.equal(predictions, labels), dtypes.float32)
    return mean(is_correct, weights, metrics_collections, updates_collections,
                name or "accuracy")


def mean_absolute_error(labels, predictions, weights=None, metrics_collections=None,
                        updates_collections=None, name=None):
    """The mean of |predictions - labels|."""
    predictions, labels, weights = remove_squeezable(predictions, labels, weights)
    return mean(math_ops.abs(predictions - labels), weights, metrics_collections,
                updates_collections, name or "mean_absolute_error")


def mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                       updates_collections=None, name=None):
    """The mean of (labels - predictions) ** 2."""
    predictions, labels, weights = remove_squeezable(predictions, labels, weights)
    return mean(math_ops.squared_difference(labels, predictions), weights,
                metrics_collections, updates_collections, name or "mean_squared_error")


def root_mean_squared_error(labels, predictions, weights=None, metrics_collections=None,
                            updates_collections=None, name=None):
    """sqrt of the streaming mean squared error."""
    predictions, labels, weights = remove_squeezable(predictions, labels, weights)
    mse, update_mse = mean_squared_error(labels, predictions, weights, None, None,
                                         name or "root_mean_squared_error")
    rmse = add_to(metrics_collections, math_ops.sqrt(mse))
    return rmse, add_to(updates_collections, math_ops.sqrt(update_mse))


def mean_relative_error(labels, predictions, normalizer, weights=None,
                        metrics_collections=None, updates_collections=None, name=None):
    """The mean of |labels - predictions| / normalizer (0 where normalizer is 0)."""
    from dtf.ops.weights_broadcast_ops import remove_squeezable_dimensions

    predictions, labels, weights = remove_squeezable(predictions, labels, weights)
    predictions, normalizer = remove_squeezable_dimensions(predictions, normalizer)
    predictions.shape.assert_is_compatible_with(normalizer.shape)
    relative_errors = math_ops.where(
        math_ops.equal(normalizer, 0.0), array_ops.zeros_like(labels),
        math_ops.divide(math_ops.abs(labels - predictions), normalizer))
    return mean(relative_errors, weights, metrics_collections, updates_collections,
                name or "mean_relative_error")


def mean_cosine_distance(labels, predictions, dim, weights=None, metrics_collections=None,
                         updates_collections=None, name=None):
    """1 - the mean of sum(labels * predictions, dim), for unit-normalized inputs."""
    predictions, labels, weights = remove_squeezable(predictions, labels, weights)
    radial_diffs = reduce_sum(math_ops.multiply(predictions, labels), axis=[dim], keepdims=True)
    mean_distance, update_op = mean(radial_diffs, weights, None, None,
                                    name or "mean_cosine_distance")
    mean_distance = add_to(metrics_collections, math_ops.subtract(1.0, mean_distance))
    return mean_distance, add_to(updates_collections, math_ops.subtract(1.0, update_op))


def percentage_below(values, threshold, weights=None, metrics_collections=None,
                     updates_collections=None, name=None):
    """The fraction of values below ``threshold``."""
    is_below = math_ops.cast(math_ops.less(values, threshold), dtypes.float32)
    return mean(is_below, weights, metrics_collections, updates_collections,
                name or "percentage_below_threshold")


# -- counts of a boolean condition --------------------------------------------------------
def _count_condition(values, weights, metrics_collections, updates_collections):
    if values.dtype.base_dtype != dtypes.bool:
        raise TypeError(f"{values.name} must be of type bool; got {values.dtype.name}")
    count = metric_variable([], dtypes.float32, name="count")
    values = math_ops.cast(values, dtypes.float32)
    if weights is not None:
        w_rank, v_rank = weights.shape.ndims, values.shape.ndims
        if w_rank is not None and v_rank is not None and w_rank not in (0, v_rank):
            raise ValueError(f"weights must have rank 0 or {v_rank} (the rank of the "
                             f"values), got rank {w_rank}: {weights}")
        values = math_ops.multiply(values, math_ops.cast(weights, dtypes.float32))
    value = read_variable(count, metrics_collections)
    update_op = state_ops.assign_add(count, reduce_sum(values))
    return value, add_to(updates_collections, update_op)


def _make_count(default_name, label_is, prediction_is, doc):
    def count(labels, predictions, weights=None, metrics_collections=None,
              updates_collections=None, name=None):
        with variable_scope(name, default_name, (predictions, labels, weights)):
            predictions, labels, weights = remove_squeezable(
                math_ops.cast(predictions, dtypes.bool), math_ops.cast(labels, dtypes.bool),
                weights)
            is_counted = math_ops.logical_and(math_ops.equal(labels, label_is),
                                              math_ops.equal(predictions, prediction_is))
            return _count_condition(is_counted, weights, metrics_collections,
                                    updates_collections)
    count.__name__ = count.__qualname__ = default_name
    count.__doc__ = doc
    return count


true_positives = _make_count("true_positives", True, True,
                             "The (weighted) count of true labels predicted true.")
false_positives = _make_count("false_positives", False, True,
                              "The (weighted) count of false labels predicted true.")
true_negatives = _make_count("true_negatives", False, False,
                             "The (weighted) count of false labels predicted false.")
false_negatives = _make_count("false_negatives", True, False,
                              "The (weighted) count of true labels predicted false.")


def _ratio_of_counts(default_name, other_count, labels, predictions, weights,
                     metrics_collections, updates_collections, name):
    """tp / (tp + other) over the streams, 0 while the denominator is 0."""
    with variable_scope(name, default_name, (predictions, labels, weights)):
        predictions, labels, weights = remove_squeezable(
            math_ops.cast(predictions, dtypes.bool), math_ops.cast(labels, dtypes.bool),
            weights)
        tp, tp_update = true_positives(labels, predictions, weights)
        other, other_update = other_count(labels, predictions, weights)

        def ratio(a, b, op_name):
            return math_ops.where(math_ops.greater(a + b, 0), math_ops.divide(a, a + b), 0,
                                  op_name)

        value = add_to(metrics_collections, ratio(tp, other, "value"))
        return value, add_to(updates_collections, ratio(tp_update, other_update, "update_op"))


def precision(labels, predictions, weights=None, metrics_collections=None,
              updates_collections=None, name=None):
    """true_positives / (true_positives + false_positives) over the stream."""
    return _ratio_of_counts("precision", false_positives, labels, predictions, weights,
                            metrics_collections, updates_collections, name)


def recall(labels, predictions, weights=None, metrics_collections=None,
           updates_collections=None, name=None):
    """true_positives / (true_positives + false_negatives) over the stream."""
    return _ratio_of_counts("recall", false_negatives, labels, predictions, weights,
                            metrics_collections, updates_collections, name)
