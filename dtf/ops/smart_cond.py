"""TF's smart_cond (tensorflow/python/framework/smart_cond.py and Keras's tf_utils): a
predicate known while the graph is built picks its branch there; any other builds a
``tf.cond``, so at run time only the branch taken runs (dropout draws no mask and batch
normalization updates no moving statistics when a fed ``training`` is False).
"""
from __future__ import annotations

import numpy as np

from dtf.framework import ops as _ops

from .control_flow_cond import cond

__all__ = ["smart_cond", "smart_constant_value"]


def smart_constant_value(pred):
    """True/False when ``pred`` is known at graph-construction time (a Python bool, 0 or 1,
    or a constant tensor), else None (a placeholder, a variable, any computed tensor)."""
    from .variables import Variable

    if isinstance(pred, Variable):  # Keras's tf_utils: a variable may change between runs
        return None
    if isinstance(pred, (bool, np.bool_)):
        return bool(pred)
    if isinstance(pred, (int, np.integer)) and pred in (0, 1):
        return bool(pred)
    if not isinstance(pred, _ops.Tensor):
        raise TypeError(f"`pred` must be a Tensor, or a Python bool, or 1 or 0. Found "
                        f"instead: {type(pred)}")
    op = pred.op
    while op.type == "Identity":  # what constant folding would see through
        op = op.inputs[0].op
    if op.type == "Const":
        return bool(np.asarray(op.get_attr("value")))
    return None


def smart_cond(pred, true_fn=None, false_fn=None, name=None):
    """``true_fn()`` or ``false_fn()`` when ``pred`` is static, else
    ``tf.cond(pred, true_fn, false_fn)``."""
    if not callable(true_fn):
        raise TypeError("`true_fn` must be callable.")
    if not callable(false_fn):
        raise TypeError("`false_fn` must be callable.")
    value = smart_constant_value(pred)
    if value is not None:
        return true_fn() if value else false_fn()
    return cond(pred, true_fn=true_fn, false_fn=false_fn, name=name)
