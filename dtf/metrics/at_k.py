"""precision/recall at k: how many of each row's top-k predicted class ids are among its
labels (a set per row, as TF's set ops see them), streamed in float64.

TF computes these with set ops over dense or sparse labels; dtf compares ids directly, so
labels are dense (a class id per row, or a row of ids, where every value counts as an
element, -1 included, as TF counts dense labels).
"""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.ops import array_ops, math_ops, nn_ops, state_ops
from dtf.ops.common import convert
from dtf.ops.reduction_ops import reduce_any, reduce_sum
from dtf.ops.weights_broadcast_ops import check_broadcastable, reshape_last_dim
from .common import add_to, metric_variable


def _at_k_name(name, k=None, class_id=None):
    name = f"{name}_at_{k}" if k is not None else f"{name}_at_k"
    return name if class_id is None else f"{name}_class{class_id}"


def _maybe_expand_labels(labels, predictions_idx):
    """Labels with a last dimension of their own: one class id per row becomes a set of one."""
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


def _first_occurrences(ids):
    """A bool per element of the last axis: true where no earlier element of the row has
    the same id (so counting them counts the row's distinct ids)."""
    n = array_ops.shape(ids)[-1]
    positions = array_ops.range(n)
    earlier = math_ops.less(array_ops.expand_dims(positions, 0),
                            array_ops.expand_dims(positions, 1))   # [j, i]: i < j
    same = math_ops.equal(array_ops.expand_dims(ids, -1), array_ops.expand_dims(ids, -2))
    return math_ops.logical_not(reduce_any(math_ops.logical_and(same, earlier), axis=-1))


def _row_counts(labels, predictions_idx, class_id):
    """(|P & L|, |P - L|, |L - P|) per row as float64, with P the row's predicted ids and
    L its labels; with ``class_id`` both sets keep only that id."""
    in_labels = reduce_any(math_ops.equal(array_ops.expand_dims(predictions_idx, -1),
                                          array_ops.expand_dims(labels, -2)), axis=-1)
    in_predictions = reduce_any(math_ops.equal(array_ops.expand_dims(labels, -1),
                                               array_ops.expand_dims(predictions_idx, -2)),
                                axis=-1)
    pred_kept = _first_occurrences(predictions_idx)
    label_kept = _first_occurrences(labels)
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
        labels = math_ops.cast(_maybe_expand_labels(labels, predictions_idx), dtypes.int64)
        counts = _row_counts(labels, predictions_idx, class_id)
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
