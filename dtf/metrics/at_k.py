"""precision/recall at k: how many of each row's top-k predicted class ids are among its
labels (a set per row, as TF's set ops see them), streamed in float64.

TF computes these with set ops over dense or sparse labels; dtf compares ids directly:
dense labels (a class id per row, or a row of ids) count every value as an element, -1
included, as TF counts dense labels; a SparseTensor of labels ([batch, n]) counts its
values only, through a mask of the positions it fills.
"""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.ops import array_ops, math_ops, nn_ops, state_ops
from dtf.ops.common import convert
from dtf.ops.reduction_ops import reduce_any, reduce_max, reduce_sum
from dtf.ops.weights_broadcast_ops import (
    broadcast_weights, check_broadcastable, reshape_last_dim,
)
from .common import add_to, metric_variable


def _at_k_name(name, k=None, class_id=None):
    name = f"{name}_at_{k}" if k is not None else f"{name}_at_k"
    return name if class_id is None else f"{name}_class{class_id}"


def _is_sparse(labels):
    return hasattr(labels, "indices") and hasattr(labels, "dense_shape")


def _sparse_labels_as_dense(labels, predictions_idx):
    """(dense int64 labels, bool mask of the positions the SparseTensor fills)."""
    from dtf.ops.sparse_ops import SparseTensor, sparse_tensor_to_dense

    labels = SparseTensor.from_value(labels)
    rank = predictions_idx.shape.ndims
    if labels.indices.shape.as_list()[-1] not in (None, rank):
        raise NotImplementedError(f"SparseTensor labels must have the rank of predictions_idx "
                                  f"({rank}) in dtf's at-k metrics, got indices of shape "
                                  f"{labels.indices.shape}")
    present = SparseTensor(labels.indices, array_ops.ones_like(labels.values, dtypes.bool),
                           labels.dense_shape)
    return (math_ops.cast(sparse_tensor_to_dense(labels), dtypes.int64),
            sparse_tensor_to_dense(present, default_value=False))


def _maybe_expand_labels(labels, predictions_idx):
    """Labels with a last dimension of their own: one class id per row becomes a set of one."""
    if _is_sparse(labels):
        raise NotImplementedError("SparseTensor labels are not supported by dtf's average "
                                  "precision at k; pass dense labels (a row of class ids each)")
    with _ops.name_scope(None, "expand_labels", (labels, predictions_idx)) as scope:
        labels = convert(labels, "labels")
        l_rank, p_rank = labels.shape.ndims, predictions_idx.shape.ndims
        if l_rank is not None and p_rank is not None:
            if p_rank == l_rank:
                return labels
            if p_rank == l_rank + 1:
                return array_ops.expand_dims(labels, -1, name=scope)
            raise ValueError(f"Unexpected labels shape {labels.shape} for predictions shape "
                             f"{predictions_idx.shape}. Predictions rank should be the same "
                             "rank as labels rank or labels rank plus one .")
        expand = math_ops.equal(array_ops.rank(predictions_idx), array_ops.rank(labels) + 1)
        return reshape_last_dim(labels, False, expand)


def _first_occurrences(ids, present=None):
    """A bool per element of the last axis: true where no earlier element of the row has
    the same id (so counting them counts the row's distinct ids); with ``present``, only
    present elements count, earlier ones included."""
    n = array_ops.shape(ids)[-1]
    positions = array_ops.range(n)
    earlier = math_ops.less(array_ops.expand_dims(positions, 0),
                            array_ops.expand_dims(positions, 1))   # [j, i]: i < j
    same = math_ops.equal(array_ops.expand_dims(ids, -1), array_ops.expand_dims(ids, -2))
    if present is not None:
        same = math_ops.logical_and(same, array_ops.expand_dims(present, -2))
    first = math_ops.logical_not(reduce_any(math_ops.logical_and(same, earlier), axis=-1))
    return first if present is None else math_ops.logical_and(first, present)


def _row_counts(labels, predictions_idx, class_id, present=None):
    """(|P & L|, |P - L|, |L - P|) per row as float64, with P the row's predicted ids and
    L its labels (those ``present`` marks, when given); with ``class_id`` both sets keep
    only that id."""
    matches = math_ops.equal(array_ops.expand_dims(predictions_idx, -1),
                             array_ops.expand_dims(labels, -2))
    if present is not None:
        matches = math_ops.logical_and(matches, array_ops.expand_dims(present, -2))
    in_labels = reduce_any(matches, axis=-1)
    in_predictions = reduce_any(math_ops.equal(array_ops.expand_dims(labels, -1),
                                               array_ops.expand_dims(predictions_idx, -2)),
                                axis=-1)
    pred_kept = _first_occurrences(predictions_idx)
    label_kept = _first_occurrences(labels, present)
    if class_id is not None:
        pred_kept = math_ops.logical_and(pred_kept, math_ops.equal(predictions_idx, class_id))
        label_kept = math_ops.logical_and(label_kept, math_ops.equal(labels, class_id))

    def count(mask):
        return reduce_sum(math_ops.cast(mask, dtypes.float64), axis=-1)
    return (count(math_ops.logical_and(pred_kept, in_labels)),
            count(math_ops.logical_and(pred_kept, math_ops.logical_not(in_labels))),
            count(math_ops.logical_and(label_kept, math_ops.logical_not(in_predictions))))


def _streamed(per_row, weights, kind, k, class_id):
    """A float64 accumulator named after ``kind`` at k, and its update adding the batch."""
    with _ops.name_scope(None, _at_k_name(kind, k, class_id=class_id), (per_row,)) as scope:
        if weights is not None:
            weights = convert(weights, "weights")
            check_broadcastable(weights, per_row)
            per_row = math_ops.multiply(per_row, math_ops.cast(weights, dtypes.float64))
        var = metric_variable([], dtypes.float64, name=scope)
        return var, state_ops.assign_add(var, reduce_sum(per_row), name="update")


def _ratio_at_top_k(kind, other_kind, pick_other, labels, predictions_idx, k, class_id,
                    weights, metrics_collections, updates_collections, name):
    with _ops.name_scope(name, _at_k_name(kind, k, class_id=class_id),
                         (predictions_idx, labels, weights)) as scope:
        predictions_idx = math_ops.cast(predictions_idx, dtypes.int64)
        present = None
        if _is_sparse(labels):
            labels, present = _sparse_labels_as_dense(labels, predictions_idx)
        else:
            labels = math_ops.cast(_maybe_expand_labels(labels, predictions_idx), dtypes.int64)
        counts = _row_counts(labels, predictions_idx, class_id, present)
        tp, tp_update = _streamed(counts[0], weights, "true_positive", k, class_id)
        other, other_update = _streamed(pick_other(counts), weights, other_kind, k, class_id)
        value = math_ops.divide(tp, math_ops.add(tp, other), name=scope)
        update = math_ops.divide(tp_update, math_ops.add(tp_update, other_update), name="update")
        return add_to(metrics_collections, value), add_to(updates_collections, update)


def precision_at_top_k(labels, predictions_idx, k=None, class_id=None, weights=None,
                       metrics_collections=None, updates_collections=None, name=None):
    """Of the predicted ids in ``predictions_idx``, the fraction that are labels."""
    return _ratio_at_top_k("precision", "false_positive", lambda c: c[1], labels,
                           predictions_idx, k, class_id, weights, metrics_collections,
                           updates_collections, name)


def recall_at_top_k(labels, predictions_idx, k=None, class_id=None, weights=None,
                    metrics_collections=None, updates_collections=None, name=None):
    """Of the labels, the fraction found among the ids in ``predictions_idx``."""
    return _ratio_at_top_k("recall", "false_negative", lambda c: c[2], labels,
                           predictions_idx, k, class_id, weights, metrics_collections,
                           updates_collections, name)


def _at_k(kind, at_top_k, labels, predictions, k, class_id, weights, metrics_collections,
          updates_collections, name):
    with _ops.name_scope(name, _at_k_name(kind, k, class_id=class_id),
                         (predictions, labels, weights)) as scope:
        _, top_k_idx = nn_ops.top_k(predictions, k)
        return at_top_k(labels, top_k_idx, k, class_id, weights, metrics_collections,
                        updates_collections, scope)


def precision_at_k(labels, predictions, k, class_id=None, weights=None,
                   metrics_collections=None, updates_collections=None, name=None):
    """Of each row's k highest-scoring classes, the fraction that are labels."""
    return _at_k("precision", precision_at_top_k, labels, predictions, k, class_id, weights,
                 metrics_collections, updates_collections, name)


def recall_at_k(labels, predictions, k, class_id=None, weights=None,
                metrics_collections=None, updates_collections=None, name=None):
    """Of the labels, the fraction among their row's k highest-scoring classes."""
    return _at_k("recall", recall_at_top_k, labels, predictions, k, class_id, weights,
                 metrics_collections, updates_collections, name)


sparse_precision_at_k = precision_at_k   # TF1's older name for the same metric


# -- average precision at k ----------------------------------------------------------------
def _average_precision_per_row(labels, predictions_idx):
    """Per row: the precision at each rank j <= k where the j-th prediction is a label,
    summed and divided by min(number of labels >= 0, k)."""
    with _ops.name_scope(None, "average_precision", (predictions_idx, labels)) as scope:
        predictions_idx = math_ops.cast(predictions_idx, dtypes.int64, name="predictions_idx")
        if predictions_idx.shape.ndims == 0:
            raise ValueError("The rank of `predictions_idx` must be at least 1.")
        k = predictions_idx.shape.as_tuple_or_none()[-1]
        if k is None:
            raise ValueError("The last dimension of predictions_idx must be set. Currently, "
                             "it is None.")
        labels = math_ops.cast(_maybe_expand_labels(labels, predictions_idx), dtypes.int64)
        relevant = math_ops.cast(
            reduce_any(math_ops.equal(array_ops.expand_dims(predictions_idx, -1),
                                      array_ops.expand_dims(labels, -2)), axis=-1),
            dtypes.float64)
        tp_per_k = math_ops.cumsum(relevant, axis=-1)
        retrieved_per_k = math_ops.cumsum(array_ops.ones_like(relevant), axis=-1)
        precision_sum = reduce_sum(math_ops.divide(tp_per_k, retrieved_per_k) * relevant,
                                   axis=(-1,))
        num_labels = reduce_sum(math_ops.cast(math_ops.greater_equal(labels, 0),
                                              dtypes.int64), axis=-1)
        num_relevant = math_ops.cast(math_ops.minimum(num_labels, k), dtypes.float64)
        return math_ops.divide(precision_sum, num_relevant, name=scope)


def _clean_out_of_range(labels, predictions):
    """Labels at or above the number of classes replaced by -1 (no label). TF picks the
    cleaned labels with a cond on their max; a Select on the same max is that choice."""
    num_classes = math_ops.cast(array_ops.shape(predictions)[-1], dtypes.int64)
    cleaned = math_ops.where_v2(math_ops.greater_equal(labels, num_classes),
                                -1 * array_ops.ones_like(labels), labels)
    return math_ops.where_v2(math_ops.greater_equal(reduce_max(labels), num_classes),
                             cleaned, labels)


def _streamed_sum(values, var_scope_name, batch_name):
    with _ops.name_scope(None, var_scope_name, (values,)) as scope:
        var = metric_variable([], dtypes.float64, name=scope)
        return var, state_ops.assign_add(var, reduce_sum(values, name=batch_name),
                                         name="update")


def average_precision_at_k(labels, predictions, k, weights=None, metrics_collections=None,
                           updates_collections=None, name=None):
    """The mean over rows of the average precision of each row's top-k predictions;
    labels at or above the number of classes count as no label."""
    if k < 1:
        raise ValueError(f"Invalid k={k}. `k` should be >= 1.")
    if _is_sparse(labels):  # TF counts a sparse row's distinct values, negatives included
        _maybe_expand_labels(labels, None)
    with _ops.name_scope(name, _at_k_name("average_precision", k),
                         (predictions, labels, weights)) as scope:
        predictions = convert(predictions, "predictions")
        _, predictions_idx = nn_ops.top_k(predictions, k)
        labels = _clean_out_of_range(math_ops.cast(labels, dtypes.int64), predictions)
        average_precision = _average_precision_per_row(labels, predictions_idx)
        if weights is None:
            row_weights = math_ops.cast(array_ops.size(average_precision), dtypes.float64)
        else:
            weights = broadcast_weights(math_ops.cast(weights, dtypes.float64),
                                        average_precision)
            average_precision = math_ops.multiply(average_precision, weights)
            row_weights = weights
        max_var, max_update = _streamed_sum(row_weights, "max", "batch_max")
        total_var, total_update = _streamed_sum(average_precision, "total", "batch_total")
        value = math_ops.div_no_nan(total_var, max_var, name="mean")
        update = math_ops.div_no_nan(total_update, max_update, name=scope)
        return add_to(metrics_collections, value), add_to(updates_collections, update)


sparse_average_precision_at_k = average_precision_at_k   # TF1's older name
