"""tf.contrib.layers: the weight regularizers (l1, l2, l1_l2, sum) and apply_regularization.

A regularizer maps a weights tensor to a scalar penalty; get_variable(regularizer=...) and
apply_regularization put that penalty in REGULARIZATION_LOSSES, which
tf.losses.get_regularization_loss and get_total_loss add up.
"""
from __future__ import annotations

import numbers

from dtf.framework import ops as _ops
from dtf.framework.ops import GraphKeys
from dtf.logging import info
from dtf.ops import math_ops, nn_ops
from dtf.ops.constant_op import constant
from dtf.ops.reduction_ops import reduce_sum

__all__ = ["l1_regularizer", "l2_regularizer", "l1_l2_regularizer", "sum_regularizer",
           "apply_regularization"]


def _checked_scale(scale, what="scale"):
    """None when a scale of 0 turns the regularizer off; raises on integers and negatives."""
    if isinstance(scale, numbers.Integral):
        raise ValueError(f"{what} cannot be an integer: {scale}")
    if isinstance(scale, numbers.Real):
        if scale < 0.0:
            raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale:g}")
        if scale == 0.0:
            info("Scale of 0 disables regularizer.")
            return None
    return scale


def _scaled_penalty(scale, scope, default_name, penalty):
    if _checked_scale(scale) is None:
        return lambda _: None

    def regularizer(weights):
        with _ops.name_scope(scope, default_name, [weights]) as name:
            my_scale = _ops.convert_to_tensor(scale, dtype=weights.dtype.base_dtype, name="scale")
            return math_ops.multiply(my_scale, penalty(weights), name=name)
    return regularizer


def l1_regularizer(scale, scope=None):
    """A regularizer returning scale * sum(|weights|)."""
    return _scaled_penalty(scale, scope, "l1_regularizer",
                           lambda w: reduce_sum(math_ops.abs(w)))


def l2_regularizer(scale, scope=None):
    """A regularizer returning scale * sum(weights ** 2) / 2 (tf.nn.l2_loss)."""
    return _scaled_penalty(scale, scope, "l2_regularizer", nn_ops.l2_loss)


def l1_l2_regularizer(scale_l1=1.0, scale_l2=1.0, scope=None):
    """The sum of an l1 and an l2 regularizer; either scale may be 0."""
    if isinstance(scale_l1, numbers.Integral):
        raise ValueError(f"scale_l1 cannot be an integer: {scale_l1}")
    if isinstance(scale_l2, numbers.Integral):
        raise ValueError(f"scale_l2 cannot be an integer: {scale_l2}")
    scope = scope or "l1_l2_regularizer"
    if scale_l1 == 0.0:
        return l2_regularizer(scale_l2, scope)
    if scale_l2 == 0.0:
        return l1_regularizer(scale_l1, scope)
    return sum_regularizer([l1_regularizer(scale_l1), l2_regularizer(scale_l2)], scope=scope)


def sum_regularizer(regularizer_list, scope=None):
    """A regularizer adding up the penalties of ``regularizer_list`` (None when empty)."""
    regularizer_list = [reg for reg in regularizer_list if reg is not None]
    if not regularizer_list:
        return None

    def sum_reg(weights):
        with _ops.name_scope(scope, "sum_regularizer", [weights]) as name:
            penalties = [p for p in (reg(weights) for reg in regularizer_list) if p is not None]
            return math_ops.add_n(penalties, name=name) if penalties else None
    return sum_reg


def apply_regularization(regularizer, weights_list=None):
    """Sums regularizer(w) over ``weights_list`` (default: the WEIGHTS collection), adds
    the sum to REGULARIZATION_LOSSES and returns it."""
    if not weights_list:
        weights_list = _ops.get_collection(GraphKeys.WEIGHTS)
    if not weights_list:
        raise ValueError("No weights to regularize.")
    with _ops.name_scope("get_regularization_penalty", values=weights_list) as scope:
        penalties = [regularizer(w) for w in weights_list]
        penalties = [p if p is not None else constant(0.0) for p in penalties]
        for p in penalties:
            if p.shape.ndims != 0:
                raise ValueError("regularizer must return a scalar Tensor instead of a Tensor "
                                 f"with rank {p.shape.ndims}.")
        summed = math_ops.add_n(penalties, name=scope)
        _ops.add_to_collection(GraphKeys.REGULARIZATION_LOSSES, summed)
        return summed
