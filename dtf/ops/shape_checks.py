"""Shape-inference errors the op families share, worded as TF words them."""
from __future__ import annotations

from .array_ops import _shape_error, _who


def rank_error(op_type, attrs, inputs, want, got, at_least=False):
    """ValueError: 'Shape must be [at least] rank <want> but is rank <got> for ...'."""
    rule = f"Shape must be {'at least ' if at_least else ''}rank {want} but is rank {got}"
    return _shape_error(_who(op_type, attrs), inputs, rule)
