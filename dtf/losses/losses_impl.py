"""tf.losses: per-example losses reduced by compute_weighted_loss, all built from
registered ops so their gradients come from the ops' own gradient rules."""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.ops import GraphKeys
from dtf.ops import array_ops, math_ops, nn_ops
from dtf.ops.common import convert
from dtf.ops.reduction_ops import reduce_sum
from dtf.ops.weights_broadcast_ops import (
    broadcast_weights, check_broadcastable, remove_squeezable_dimensions, squeeze_last_if,
)
from .util import add_loss

_LOSSES = GraphKeys.LOSSES


class Reduction:
    """How compute_weighted_loss reduces the weighted per-example losses."""

    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls):
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE,
                cls.SUM_OVER_NONZERO_WEIGHTS, cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key):
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}. Key should be one of {cls.all()}.")


def _safe_mean(losses, num_present):
    return math_ops.div_no_nan(reduce_sum(losses), num_present, name="value")


def _num_elements(losses):
    with _ops.name_scope(None, "num_elements", [losses]) as scope:
        return math_ops.cast(array_ops.size(losses, name=scope), losses.dtype)


def _num_present(losses, weights, per_batch=False):
    """How many losses have a non-zero weight (per batch row with ``per_batch``)."""
    with _ops.name_scope(None, "num_present", (losses, weights)) as scope:
        weights = math_ops.cast(weights, dtypes.float32)
        present = math_ops.where(math_ops.equal(weights, 0.0), array_ops.zeros_like(weights),
                                 array_ops.ones_like(weights))
        present = broadcast_weights(present, losses)
        if per_batch:
            axes = array_ops.range(1, array_ops.rank(present))
            return reduce_sum(present, axis=axes, keepdims=True, name=scope)
        return reduce_sum(present, name=scope)


def compute_weighted_loss(losses, weights=1.0, scope=None, loss_collection=_LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """losses * weights, reduced as ``reduction`` says, added to ``loss_collection``."""
    Reduction.validate(reduction)
    with _ops.name_scope(scope, "weighted_loss", (losses, weights)):
        losses = convert(losses, "losses")
        input_dtype = losses.dtype
        losses = math_ops.cast(losses, dtypes.float32)
        weights = math_ops.cast(weights, dtypes.float32)
        check_broadcastable(weights, losses)
        weighted_losses = math_ops.multiply(losses, weights)
        if reduction == Reduction.NONE:
            loss = weighted_losses
        else:
            loss = reduce_sum(weighted_losses)
            if reduction == Reduction.MEAN:
                loss = _safe_mean(loss, reduce_sum(array_ops.ones_like(losses) * weights))
            elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                loss = _safe_mean(loss, _num_present(losses, weights))
            elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                loss = _safe_mean(loss, _num_elements(losses))
        loss = math_ops.cast(loss, input_dtype)
        add_loss(loss, loss_collection)
        return loss


def _require(**args):
    for name, value in args.items():
        if value is None:
            raise ValueError(f"Argument `{name}` must not be None.")


def _float_pair(predictions, labels):
    """Both as float32, after checking their static shapes agree."""
    predictions = math_ops.cast(predictions, dtypes.float32)
    labels = math_ops.cast(labels, dtypes.float32)
    predictions.shape.assert_is_compatible_with(labels.shape)
    return predictions, labels


def _pointwise_loss(default_name, per_example, labels, predictions, weights, scope,
                    loss_collection, reduction, predictions_arg="predictions"):
    """The shape every regression-style loss shares: both inputs as float32 in the loss's
    name scope, ``per_example(predictions, labels)``, then compute_weighted_loss."""
    _require(**{"labels": labels, predictions_arg: predictions})
    with _ops.name_scope(scope, default_name, (predictions, labels, weights)) as scope:
        predictions, labels = _float_pair(predictions, labels)
        losses = per_example(predictions, labels)
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def absolute_difference(labels, predictions, weights=1.0, scope=None, loss_collection=_LOSSES,
                        reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """|predictions - labels|, weighted and reduced."""
    return _pointwise_loss("absolute_difference",
                           lambda p, y: math_ops.abs(math_ops.subtract(p, y)),
                           labels, predictions, weights, scope, loss_collection, reduction)


def cosine_distance(labels, predictions, axis=None, weights=1.0, scope=None,
                    loss_collection=_LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS,
                    dim=None):
    """1 - sum(labels * predictions, axis) for unit-normalized inputs; ``dim`` is the old
    name of ``axis``."""
    if dim is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'dim'")
        axis = dim
    if axis is None:
        raise ValueError("You must specify argument `axis`.")
    return _pointwise_loss(
        "cosine_distance_loss",
        lambda p, y: 1 - reduce_sum(math_ops.multiply(p, y), axis=(axis,), keepdims=True),
        labels, predictions, weights, scope, loss_collection, reduction)


def _hinge(logits, labels):
    all_ones = array_ops.ones_like(labels)
    labels = math_ops.subtract(2 * labels, all_ones)
    return nn_ops.relu(math_ops.subtract(all_ones, math_ops.multiply(labels, logits)))


def hinge_loss(labels, logits, weights=1.0, scope=None, loss_collection=_LOSSES,
               reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """relu(1 - (2 * labels - 1) * logits) for labels in {0, 1}."""
    return _pointwise_loss("hinge_loss", _hinge, labels, logits, weights, scope,
                           loss_collection, reduction, predictions_arg="logits")


def huber_loss(labels, predictions, weights=1.0, delta=1.0, scope=None,
               loss_collection=_LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """Quadratic for |error| <= delta, linear beyond."""
    def huber(p, y):
        abs_error = math_ops.abs(math_ops.subtract(p, y))
        quadratic = math_ops.minimum(abs_error, delta)
        linear = math_ops.subtract(abs_error, quadratic)
        return math_ops.add(
            math_ops.multiply(convert(0.5, "half", dtype=quadratic.dtype),
                              math_ops.multiply(quadratic, quadratic)),
            math_ops.multiply(delta, linear))
    return _pointwise_loss("huber_loss", huber, labels, predictions, weights, scope,
                           loss_collection, reduction)


def log_loss(labels, predictions, weights=1.0, epsilon=1e-7, scope=None,
             loss_collection=_LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """-labels * log(p + eps) - (1 - labels) * log(1 - p + eps)."""
    return _pointwise_loss(
        "log_loss",
        lambda p, y: (-math_ops.multiply(y, math_ops.log(p + epsilon))
                      - math_ops.multiply(1 - y, math_ops.log(1 - p + epsilon))),
        labels, predictions, weights, scope, loss_collection, reduction)


def mean_squared_error(labels, predictions, weights=1.0, scope=None, loss_collection=_LOSSES,
                       reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """(predictions - labels) ** 2, weighted and reduced."""
    return _pointwise_loss("mean_squared_error", math_ops.squared_difference, labels,
                           predictions, weights, scope, loss_collection, reduction)


def mean_pairwise_squared_error(labels, predictions, weights=1.0, scope=None,
                                loss_collection=_LOSSES):
    """Mean over each batch row of the squared differences between all pairs of
    (prediction - label) differences, weighted per row."""
    _require(labels=labels, predictions=predictions)
    with _ops.name_scope(scope, "mean_pairwise_squared_error",
                         (predictions, labels, weights)) as scope:
        weights = math_ops.cast(weights, dtypes.float32)
        labels = math_ops.cast(labels, dtypes.float32)
        check_broadcastable(weights, labels)
        predictions, labels = _float_pair(predictions, labels)
        diffs = math_ops.subtract(predictions, labels)
        axis = array_ops.range(1, array_ops.rank(diffs))
        sum_squares = reduce_sum(math_ops.square(diffs), axis=axis, keepdims=True)
        num_present = _num_present(diffs, weights, per_batch=True)
        term1 = 2.0 * math_ops.div_no_nan(sum_squares, math_ops.maximum(num_present - 1, 0),
                                          name="value")
        sum_diff = reduce_sum(diffs, axis=axis, keepdims=True)
        term2 = 2.0 * math_ops.div_no_nan(
            math_ops.square(sum_diff),
            math_ops.maximum(math_ops.multiply(num_present, num_present - 1), 0), name="value")
        loss = reduce_sum(math_ops.multiply(term1 - term2, weights))
        mean_loss = math_ops.where(reduce_sum(num_present) > 0, loss,
                                   array_ops.zeros_like(loss), name="value")
        add_loss(mean_loss, loss_collection)
        return mean_loss


def _logits_and_labels(logits, labels):
    """Labels cast to the logits' dtype, after checking their static shapes agree."""
    logits = convert(logits, "logits")
    labels = math_ops.cast(labels, logits.dtype)
    logits.shape.assert_is_compatible_with(labels.shape)
    return logits, labels


def sigmoid_cross_entropy(multi_class_labels, logits, weights=1.0, label_smoothing=0,
                          scope=None, loss_collection=_LOSSES,
                          reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """sigmoid_cross_entropy_with_logits, labels smoothed towards 1/2."""
    _require(multi_class_labels=multi_class_labels, logits=logits)
    with _ops.name_scope(scope, "sigmoid_cross_entropy_loss",
                         (logits, multi_class_labels, weights)) as scope:
        logits, labels = _logits_and_labels(logits, multi_class_labels)
        if label_smoothing > 0:
            labels = labels * (1 - label_smoothing) + 0.5 * label_smoothing
        losses = nn_ops.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits,
                                                          name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def softmax_cross_entropy(onehot_labels, logits, weights=1.0, label_smoothing=0, scope=None,
                          loss_collection=_LOSSES, reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """softmax_cross_entropy_with_logits_v2 per example, labels smoothed towards uniform;
    no gradient flows into the labels."""
    _require(onehot_labels=onehot_labels, logits=logits)
    with _ops.name_scope(scope, "softmax_cross_entropy_loss",
                         (logits, onehot_labels, weights)) as scope:
        logits, labels = _logits_and_labels(logits, onehot_labels)
        if label_smoothing > 0:
            num_classes = math_ops.cast(array_ops.shape(labels)[-1], logits.dtype)
            labels = labels * (1.0 - label_smoothing) + label_smoothing / num_classes
        labels = array_ops.stop_gradient(labels, name="labels_stop_gradient")
        losses = nn_ops.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits,
                                                             name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def _squeeze_weights(labels, logits, weights, expected_rank_diff):
    """remove_squeezable_dimensions, then weights lose a trailing 1 when they have one
    more dimension than labels."""
    labels, logits = remove_squeezable_dimensions(labels, logits, expected_rank_diff)
    weights = convert(weights, "weights")
    l_rank, w_rank = labels.shape.ndims, weights.shape.ndims
    if l_rank is not None and w_rank is not None:
        if w_rank - l_rank == 1:
            weights = array_ops.squeeze(weights, [-1])
        return labels, logits, weights
    w_dims = weights.shape.as_tuple_or_none()
    if w_dims is None or (w_dims and w_dims[-1] in (None, 1)):
        rank_diff = array_ops.rank(weights) - array_ops.rank(labels)
        weights = squeeze_last_if(weights, math_ops.equal(1, rank_diff))
    return labels, logits, weights


def sparse_softmax_cross_entropy(labels, logits, weights=1.0, scope=None,
                                 loss_collection=_LOSSES,
                                 reduction=Reduction.SUM_BY_NONZERO_WEIGHTS):
    """sparse_softmax_cross_entropy_with_logits per example (labels are class ids)."""
    _require(labels=labels, logits=logits)
    with _ops.name_scope(scope, "sparse_softmax_cross_entropy_loss",
                         (logits, labels, weights)) as scope:
        labels, logits, weights = _squeeze_weights(labels, logits, weights, 1)
        losses = nn_ops.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits,
                                                                 name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)
