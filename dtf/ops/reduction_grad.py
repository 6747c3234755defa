"""Gradients of the reductions: broadcast the incoming gradient back over the reduced axes
(and pick the arg-max/min positions for Max/Min)."""
from __future__ import annotations


from dtf.framework.op_registry import NotDifferentiable, RegisterGradient

from . import array_ops, math_ops
from .common import const_value
from .reduction_ops import reduced_shape, reduced_shape_tensor

NotDifferentiable("Any")
NotDifferentiable("All")
NotDifferentiable("ReducedShape")


def _kept_and_input_shape(op):
    """(kept-dims shape, input shape): static lists where the static shape allows (a kept
    shape may hold one -1 for reshape), runtime shape tensors otherwise."""
    x, axes = op.inputs
    av = const_value(axes)
    if av is not None and x.shape.ndims is not None:
        kept = [-1 if d is None else d for d in reduced_shape(x.shape, av, True).as_tuple_or_none()]
        if kept.count(-1) <= 1:
            in_shape = x.shape.as_list() if x.shape.is_fully_defined() else array_ops.shape(x)
            return kept, in_shape
    sx = array_ops.shape(x)
    return reduced_shape_tensor(sx, axes), sx


def _broadcast_back(op, grad):
    kept, in_shape = _kept_and_input_shape(op)
    g = array_ops.reshape(grad, kept)
    if isinstance(kept, list) and kept == in_shape:
        return g
    return array_ops.broadcast_to(g, in_shape)


@RegisterGradient("Sum")
def _sum_grad(op, grad):
    return [_broadcast_back(op, grad), None]


@RegisterGradient("Mean")
def _mean_grad(op, grad):
    # TF divides after broadcasting; dividing the reduced gradient first gives the same
    # values (each element is one gradient over the same factor) and divides the output's
    # size instead of the input's: the ResNet step's global average pool divided 4 MiB.
    x = op.inputs[0]
    out = op.outputs[0]
    if x.shape.is_fully_defined() and out.shape.is_fully_defined():
        n_in = max(x.shape.num_elements(), 1)
        n_out = max(out.shape.num_elements(), 1)
        factor = n_in // n_out
        return [_broadcast_back(op, grad / math_ops.cast(factor, grad.dtype)), None]
    # Elements averaged into each output: size(x) / size(out), from runtime sizes.
    n_out = out.shape.num_elements()
    n_out = array_ops.size(out) if n_out is None else max(n_out, 1)
    factor = math_ops.cast(array_ops.size(x), grad.dtype) / math_ops.cast(n_out, grad.dtype)
    return [_broadcast_back(op, grad / factor), None]


@RegisterGradient("Prod")
def _prod_grad(op, grad):
    # d/dx_i prod = prod / x_i (exact when no zeros; TF uses a cumprod form for zeros).
    x = op.inputs[0]
    y = array_ops.reshape(op.outputs[0], _kept_and_input_shape(op)[0])
    g = _broadcast_back(op, grad)
    return [g * array_ops.broadcast_to(y, array_ops.shape(x)) / x, None]


def _min_or_max_grad(op, grad):
    x = op.inputs[0]
    kept, in_shape = _kept_and_input_shape(op)
    y = array_ops.reshape(op.outputs[0], kept)
    g = array_ops.reshape(grad, kept)
    equal = math_ops.cast(math_ops.equal(y, x), g.dtype)
    from .reduction_ops import reduce_sum

    num = array_ops.reshape(reduce_sum(equal, op.inputs[1]), kept)
    return [math_ops.divide(equal, num) * g, None]


RegisterGradient("Max")(_min_or_max_grad)
RegisterGradient("Min")(_min_or_max_grad)


