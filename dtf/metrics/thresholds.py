"""Metrics over a list of decision thresholds: the per-threshold confusion counts, AUC,
and precision/recall at thresholds.

TF asserts at run time that predictions lie in [0, 1]; dtf has no Assert op yet, so values
outside are counted as they fall (below every threshold, or above).
"""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.ops import array_ops, math_ops, state_ops
from dtf.ops.constant_op import constant
from dtf.ops.reduction_ops import argmax, argmin, reduce_min, reduce_sum
from dtf.ops.variable_scope import variable_scope
from dtf.ops.weights_broadcast_ops import broadcast_weights
from .common import add_to, metric_variable, read_variable, remove_squeezable

_COUNTS = {  # key: (variable name, label is positive, prediction is positive)
    "tp": ("true_positives", True, True),
    "fn": ("false_negatives", True, False),
    "tn": ("true_negatives", False, False),
    "fp": ("false_positives", False, True),
}


def confusion_matrix_at_thresholds(labels, predictions, thresholds, weights=None,
                                   includes=None):
    """({key: accumulator}, {key: update op}) for the counts in ``includes`` (tp, fn, tn,
    fp), one entry per threshold; a prediction is positive when above the threshold."""
    includes = tuple(_COUNTS) if includes is None else includes
    for key in includes:
        if key not in _COUNTS:
            raise ValueError(f"Invalid key: {key}")
    predictions, labels, weights = remove_squeezable(
        math_ops.cast(predictions, dtypes.float32), math_ops.cast(labels, dtypes.bool), weights)
    n = len(thresholds)
    predictions_2d = array_ops.reshape(predictions, [-1, 1])
    labels_2d = array_ops.reshape(math_ops.cast(labels, dtypes.bool), [1, -1])
    num_predictions = predictions_2d.shape.as_tuple_or_none()[0]
    if num_predictions is None:
        num_predictions = array_ops.shape(predictions_2d)[0]
    thresh_tiled = array_ops.tile(
        array_ops.expand_dims(constant(thresholds, dtype=dtypes.float32), [1]),
        array_ops.stack([1, num_predictions]))
    pred_is_pos = math_ops.greater(
        array_ops.tile(array_ops.transpose(predictions_2d), [n, 1]), thresh_tiled)
    label_is_pos = array_ops.tile(labels_2d, [n, 1])
    weights_tiled = None
    if weights is not None:
        weights = broadcast_weights(math_ops.cast(weights, dtypes.float32), predictions)
        weights_tiled = array_ops.tile(array_ops.reshape(weights, [1, -1]), [n, 1])
        thresh_tiled.shape.assert_is_compatible_with(weights_tiled.shape)
    values, updates = {}, {}
    for key in ("tp", "fn", "tn", "fp"):
        if key not in includes:
            continue
        var_name, label_pos, pred_pos = _COUNTS[key]
        var = metric_variable([n], dtypes.float32, name=var_name)
        label_hit = label_is_pos if label_pos else math_ops.logical_not(label_is_pos)
        pred_hit = pred_is_pos if pred_pos else math_ops.logical_not(pred_is_pos)
        hit = math_ops.logical_and(label_hit, pred_hit)
        hit = math_ops.cast(hit, dtypes.float32)
        if weights_tiled is not None:
            hit *= weights_tiled
        updates[key] = state_ops.assign_add(var, reduce_sum(hit, 1))
        values[key] = var
    return values, updates


def _make_count_at_thresholds(key):
    default_name = _COUNTS[key][0]

    def count_at_thresholds(labels, predictions, thresholds, weights=None,
                            metrics_collections=None, updates_collections=None, name=None):
        with variable_scope(name, default_name, (predictions, labels, weights)):
            values, updates = confusion_matrix_at_thresholds(labels, predictions, thresholds,
                                                             weights, includes=(key,))
            value = read_variable(values[key], metrics_collections)
            return value, add_to(updates_collections, updates[key])
    count_at_thresholds.__name__ = f"{default_name}_at_thresholds"
    count_at_thresholds.__doc__ = (f"The (weighted) {default_name.replace('_', ' ')} at each "
                                   "threshold.")
    return count_at_thresholds


true_positives_at_thresholds = _make_count_at_thresholds("tp")
false_negatives_at_thresholds = _make_count_at_thresholds("fn")
true_negatives_at_thresholds = _make_count_at_thresholds("tn")
false_positives_at_thresholds = _make_count_at_thresholds("fp")


def _ratio_at_thresholds(default_name, other, ratio_name, labels, predictions, thresholds,
                         weights, metrics_collections, updates_collections, name):
    with variable_scope(name, default_name, (predictions, labels, weights)):
        values, updates = confusion_matrix_at_thresholds(labels, predictions, thresholds,
                                                         weights, includes=("tp", other))

        def ratio(tp, o, suffix):
            return math_ops.divide(tp, 1e-7 + tp + o, name=f"{ratio_name}_{suffix}")

        value = add_to(metrics_collections, ratio(values["tp"], values[other], "value"))
        return value, add_to(updates_collections, ratio(updates["tp"], updates[other], "update_op"))


def precision_at_thresholds(labels, predictions, thresholds, weights=None,
                            metrics_collections=None, updates_collections=None, name=None):
    """tp / (tp + fp) at each threshold."""
    return _ratio_at_thresholds("precision_at_thresholds", "fp", "precision", labels,
                                predictions, thresholds, weights, metrics_collections,
                                updates_collections, name)


def recall_at_thresholds(labels, predictions, thresholds, weights=None,
                         metrics_collections=None, updates_collections=None, name=None):
    """tp / (tp + fn) at each threshold."""
    return _ratio_at_thresholds("recall_at_thresholds", "fn", "recall", labels, predictions,
                                thresholds, weights, metrics_collections, updates_collections,
                                name)


# -- AUC ------------------------------------------------------------------------------------
_SUMMATIONS = ("trapezoidal", "careful_interpolation", "minoring", "majoring")


def _interpolate_pr_auc(tp, fp, fn, n):
    """PR-AUC integrating precision as a function of the positive count between thresholds
    (Davis & Goadrich), which the trapezoidal rule gets wrong."""
    dtp = tp[:n - 1] - tp[1:]
    p = tp + fp
    prec_slope = math_ops.div_no_nan(dtp, math_ops.maximum(p[:n - 1] - p[1:], 0),
                                     name="prec_slope")
    intercept = tp[1:] - math_ops.multiply(prec_slope, p[1:])
    safe_p_ratio = math_ops.where(
        math_ops.logical_and(p[:n - 1] > 0, p[1:] > 0),
        math_ops.div_no_nan(p[:n - 1], math_ops.maximum(p[1:], 0), name="recall_relative_ratio"),
        array_ops.ones_like(p[1:]))
    return reduce_sum(
        math_ops.div_no_nan(prec_slope * (dtp + intercept * math_ops.log(safe_p_ratio)),
                            math_ops.maximum(tp[1:] + fn[1:], 0), name="pr_auc_increment"),
        name="interpolate_pr_auc")


def _area(tp, fn, tn, fp, n, curve, summation_method, name):
    if curve == "PR" and summation_method == "careful_interpolation":
        return _interpolate_pr_auc(tp, fp, fn, n)
    epsilon = 1.0e-6
    rec = math_ops.divide(tp + epsilon, tp + fn + epsilon)
    if curve == "ROC":
        x, y = math_ops.divide(fp, fp + tn + epsilon), rec
    else:
        x, y = rec, math_ops.divide(tp + epsilon, tp + fp + epsilon)
    if summation_method in ("trapezoidal", "careful_interpolation"):
        heights = (y[:n - 1] + y[1:]) / 2.0
    elif summation_method == "minoring":
        heights = math_ops.minimum(y[:n - 1], y[1:])
    else:
        heights = math_ops.maximum(y[:n - 1], y[1:])
    return reduce_sum(math_ops.multiply(x[:n - 1] - x[1:], heights), name=name)


def auc(labels, predictions, weights=None, num_thresholds=200, metrics_collections=None,
        updates_collections=None, curve="ROC", name=None, summation_method="trapezoidal",
        thresholds=None):
    """Area under the ROC or PR curve, approximated over ``num_thresholds`` thresholds
    spread evenly over [0, 1] (or the given ``thresholds``)."""
    with variable_scope(name, "auc", (labels, predictions, weights)):
        if curve not in ("ROC", "PR"):
            raise ValueError(f"Curve must be either ROC or PR. Curve {curve} is unknown.")
        if summation_method not in _SUMMATIONS:
            raise ValueError(f"Invalid summation_method: {summation_method} summation_method "
                             "should be 'trapezoidal', 'careful_interpolation', 'minoring', "
                             "or 'majoring'.")
        kepsilon = 1e-7  # so that predictions of exactly 0 and 1 fall inside the ends
        if thresholds is not None:
            inner = sorted(thresholds)
            num_thresholds = len(inner) + 2
        else:
            inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        all_thresholds = [0.0 - kepsilon] + inner + [1.0 + kepsilon]
        values, updates = confusion_matrix_at_thresholds(labels, predictions, all_thresholds,
                                                         weights)
        value = _area(values["tp"], values["fn"], values["tn"], values["fp"], num_thresholds,
                      curve, summation_method, "value")
        update_op = _area(updates["tp"], updates["fn"], updates["tn"], updates["fp"],
                          num_thresholds, curve, summation_method, "update_op")
        return add_to(metrics_collections, value), add_to(updates_collections, update_op)


# -- one rate at a target value of the other ---------------------------------------------------
def _rate_at_target(default_name, target_name, target, labels, predictions, weights,
                    num_thresholds, last_threshold, rate_at, metrics_collections,
                    updates_collections, name):
    if target < 0 or target > 1:
        raise ValueError(f"`{target_name}` must be in the range [0, 1]. Currently, "
                         f"`{target_name}` got {target}.")
    with variable_scope(name, default_name, (predictions, labels, weights)):
        inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
        values, updates = confusion_matrix_at_thresholds(
            labels, predictions, [0.0 - 1e-7] + inner + [last_threshold], weights)
        value = rate_at(values["tp"], values["tn"], values["fp"], values["fn"], "value")
        update_op = rate_at(updates["tp"], updates["tn"], updates["fp"], updates["fn"],
                            "update_op")
        return add_to(metrics_collections, value), add_to(updates_collections, update_op)


def sensitivity_at_specificity(labels, predictions, specificity, weights=None,
                               num_thresholds=200, metrics_collections=None,
                               updates_collections=None, name=None):
    """The recall at the threshold whose specificity is closest to ``specificity``."""
    kepsilon = 1e-7

    def rate_at(tp, tn, fp, fn, op_name):
        specificities = math_ops.divide(tn, tn + fp + kepsilon)
        index = math_ops.cast(argmin(math_ops.abs(specificities - specificity), 0),
                              dtypes.int32)
        return math_ops.divide(tp[index], tp[index] + fn[index] + kepsilon, op_name)

    return _rate_at_target("sensitivity_at_specificity", "specificity", specificity, labels,
                           predictions, weights, num_thresholds, 1.0 + kepsilon, rate_at,
                           metrics_collections, updates_collections, name)


def specificity_at_sensitivity(labels, predictions, sensitivity, weights=None,
                               num_thresholds=200, metrics_collections=None,
                               updates_collections=None, name=None):
    """The specificity at the threshold whose recall is closest to ``sensitivity`` (the
    last such threshold on ties)."""
    kepsilon = 1e-7

    def rate_at(tp, tn, fp, fn, op_name):
        distance = math_ops.abs(math_ops.divide(tp, tp + fn + kepsilon) - sensitivity)
        at_min = math_ops.cast(math_ops.equal(distance, reduce_min(distance)), dtypes.int64)
        index = math_ops.cast(argmax(math_ops.cumsum(at_min), 0), dtypes.int32)
        return math_ops.divide(tn[index], tn[index] + fp[index] + kepsilon, op_name)

    # TF ends these thresholds at 1 - epsilon, not 1 + epsilon as everywhere else.
    return _rate_at_target("specificity_at_sensitivity", "sensitivity", sensitivity, labels,
                           predictions, weights, num_thresholds, 1.0 - kepsilon, rate_at,
                           metrics_collections, updates_collections, name)
