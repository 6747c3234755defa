"""The LOSSES and REGULARIZATION_LOSSES collections and the totals built from them."""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.ops import GraphKeys
from dtf.ops import math_ops
from dtf.ops.constant_op import constant


def add_loss(loss, loss_collection=GraphKeys.LOSSES):
    """Adds ``loss`` to ``loss_collection`` (nothing when the collection is None or empty)."""
    if loss_collection:
        _ops.add_to_collection(loss_collection, loss)


def get_losses(scope=None, loss_collection=GraphKeys.LOSSES):
    """The losses in ``loss_collection`` whose names match ``scope``."""
    return _ops.get_collection(loss_collection, scope)


def get_regularization_losses(scope=None):
    """The tensors in REGULARIZATION_LOSSES whose names match ``scope``."""
    return _ops.get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope=None, name="total_regularization_loss"):
    """The sum of the regularization losses, or a constant 0.0 when there are none."""
    losses = get_regularization_losses(scope)
    if losses:
        return math_ops.add_n(losses, name=name)
    return constant(0.0, dtype=dtypes.float32)


def get_total_loss(add_regularization_losses=True, name="total_loss", scope=None):
    """The sum of the LOSSES collection, plus the regularization losses by default."""
    losses = get_losses(scope=scope)
    if add_regularization_losses:
        losses = losses + get_regularization_losses(scope=scope)
    return math_ops.add_n(losses, name=name)
