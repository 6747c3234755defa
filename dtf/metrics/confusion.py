"""Per-class metrics: mean intersection-over-union over a streaming confusion matrix, and
mean per-class accuracy."""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.ops import array_ops, math_ops, state_ops
from dtf.ops.common import convert
from dtf.ops.confusion_matrix import class_sums, confusion_matrix
from dtf.ops.reduction_ops import reduce_mean, reduce_sum
from dtf.ops.variable_scope import variable_scope
from .common import add_to, metric_variable


def _flat(t):
    return array_ops.reshape(t, [-1]) if t.shape.ndims is None or t.shape.ndims > 1 else t


def _diag_part(matrix, n):
    return array_ops.gather(array_ops.reshape(matrix, [-1]), array_ops.range(n) * (n + 1))


def _check_num_classes(num_classes):
    if not isinstance(num_classes, int) or isinstance(num_classes, bool) or num_classes < 1:
        raise NotImplementedError(
            f"num_classes must be a positive Python int in dtf (got {num_classes!r}); a tensor "
            "num_classes is not supported")


def mean_iou(labels, predictions, num_classes, weights=None, metrics_collections=None,
             updates_collections=None, name=None):
    """The mean over classes of intersection / union, from a streaming confusion matrix
    (variable ``mean_iou/total_confusion_matrix``); classes never seen are left out."""
    _check_num_classes(num_classes)
    with variable_scope(name, "mean_iou", (predictions, labels, weights)):
        predictions, labels = convert(predictions, "predictions"), convert(labels, "labels")
        predictions.shape.assert_is_compatible_with(labels.shape)
        total_cm = metric_variable([num_classes, num_classes], dtypes.float64,
                                   name="total_confusion_matrix")
        weights = None if weights is None else _flat(weights)
        current_cm = confusion_matrix(_flat(labels), _flat(predictions), num_classes,
                                      dtype=dtypes.float64, weights=weights)
        update_op = state_ops.assign_add(total_cm, current_cm)
        sum_over_row = math_ops.cast(reduce_sum(total_cm, 0), dtypes.float32)
        sum_over_col = math_ops.cast(reduce_sum(total_cm, 1), dtypes.float32)
        cm_diag = math_ops.cast(_diag_part(total_cm, num_classes), dtypes.float32)
        denominator = sum_over_row + sum_over_col - cm_diag
        num_valid = reduce_sum(math_ops.cast(math_ops.not_equal(denominator, 0), dtypes.float32))
        denominator = math_ops.where(math_ops.greater(denominator, 0), denominator,
                                     array_ops.ones_like(denominator))
        iou = math_ops.divide(cm_diag, denominator)
        value = math_ops.where(math_ops.greater(num_valid, 0),
                               reduce_sum(iou, name="mean_iou") / num_valid, 0)
        return add_to(metrics_collections, value), add_to(updates_collections, update_op)


def mean_per_class_accuracy(labels, predictions, num_classes, weights=None,
                            metrics_collections=None, updates_collections=None, name=None):
    """The mean over classes of each class's accuracy (variables ``mean_accuracy/total``,
    per class the weight seen, and ``mean_accuracy/count``, the weight predicted right)."""
    _check_num_classes(num_classes)
    with variable_scope(name, "mean_accuracy", (predictions, labels, weights)):
        labels = _flat(math_ops.cast(labels, dtypes.int64))
        predictions = _flat(convert(predictions, "predictions"))
        predictions.shape.assert_is_compatible_with(labels.shape)
        total = metric_variable([num_classes], dtypes.float32, name="total")
        count = metric_variable([num_classes], dtypes.float32, name="count")
        ones = array_ops.ones(array_ops.reshape(array_ops.size(labels), [1]), dtypes.float32)
        if labels.dtype != predictions.dtype:
            predictions = math_ops.cast(predictions, labels.dtype)
        is_correct = math_ops.cast(math_ops.equal(predictions, labels), dtypes.float32)
        if weights is not None:
            weights = math_ops.cast(_flat(weights), dtypes.float32)
            is_correct *= weights
            ones *= weights
        # TF scatter_adds into the variables; a segment sum added in is the same sum.
        update_total = state_ops.assign_add(total, class_sums(ones, [labels], num_classes,
                                                               num_classes))
        update_count = state_ops.assign_add(count, class_sums(is_correct, [labels],
                                                               num_classes, num_classes))
        per_class = math_ops.div_no_nan(count, math_ops.maximum(total, 0))
        value = reduce_mean(per_class, name="mean_accuracy")
        update_op = math_ops.div_no_nan(update_count, math_ops.maximum(update_total, 0),
                                        name="update_op")
        return add_to(metrics_collections, value), add_to(updates_collections, update_op)
