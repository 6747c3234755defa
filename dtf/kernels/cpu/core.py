"""Kernels of the structural ops: Const, Placeholder, Identity, NoOp."""
from __future__ import annotations

from dtf.framework import dtypes, errors
from dtf.kernels.registry import register_kernel


@register_kernel("Const", "CPU")
def const(node):
    value = node.attrs["value"]

    def compute(ctx):
        return value

    # The executor puts the value in the step's slots up front instead of calling this
    # every step (a word2vec step has 124 constants).
    compute.constant_output = value
    return compute


def _shape_str(shape):
    if shape is None:
        return "<unknown>"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


@register_kernel("Placeholder", "CPU")
def placeholder(node):
    dtype = node.attrs["dtype"]
    shape = node.attrs.get("shape")
    msg = (f"You must feed a value for placeholder tensor '{node.name}' with dtype "
           f"{dtypes.tf_type_string(dtype)}"
           + (f" and shape {_shape_str(shape)}" if shape is not None else ""))

    def compute(ctx):
        raise errors.InvalidArgumentError(node.name, None, msg)

    return compute




@register_kernel("Identity", "CPU")
def identity(node):
    return lambda ctx, x: x


@register_kernel("NoOp", "CPU")
def no_op(node):
    return lambda ctx: None
