"""Gradients of the fused batch norm ops, as TF registers them (nn_grad.py).

The first gradient is one FusedBatchNormGrad op of the matching version, reading the
forward op's reserve spaces in training and the given mean and variance in inference
(where TF transposes a channels-first input to NHWC around it). No gradient flows into the
returned statistics, nor into the given mean and variance.

The gradient of a gradient op is TF's too: the same gradient written as a composite of
registered ops (``_batch_norm_grad``, TF's ``_BatchNormGrad``) differentiated by
tf.gradients, so second derivatives of batch norm keep working.
"""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import RegisterGradient
from . import array_ops, math_ops, reduction_ops

_GRAD_OP = {"FusedBatchNorm": "FusedBatchNormGrad", "FusedBatchNormV2": "FusedBatchNormGradV2",
            "FusedBatchNormV3": "FusedBatchNormGradV3"}


def _attr(op, key, default=None):
    try:
        v = op.get_attr(key)
    except ValueError:
        return default
    return v.decode() if isinstance(v, bytes) else v


def _grad_attrs(op, data_format):
    attrs = {"T": op.get_attr("T"), "epsilon": op.get_attr("epsilon"),
             "data_format": data_format, "is_training": _attr(op, "is_training", True)}
    if op.type != "FusedBatchNorm":
        attrs["U"] = op.get_attr("U")
    return attrs


def _fused_batch_norm_grad(op, *grads):
    x, scale, grad_y = op.inputs[0], op.inputs[1], grads[0]
    data_format = _attr(op, "data_format", "NHWC")
    grad_type = _GRAD_OP[op.type]
    v3 = op.type == "FusedBatchNormV3"
    if _attr(op, "is_training", True):
        ins = [grad_y, x, scale, op.outputs[3], op.outputs[4]] + ([op.outputs[5]] if v3 else [])
        out = _ops.make_op(grad_type, ins, _grad_attrs(op, data_format), name=grad_type).outputs
        return [out[0], out[1], out[2], None, None]
    pop_mean, pop_var = op.inputs[3], op.inputs[4]
    first = data_format in ("NCHW", "NCDHW")
    if first:  # TF's CPU gradient in inference is NHWC only
        to_last = [0, 2, 3, 1] if x.shape.ndims == 4 else [0, 2, 3, 4, 1]
        x, grad_y = array_ops.transpose(x, to_last), array_ops.transpose(grad_y, to_last)
    ins = [grad_y, x, scale, pop_mean, pop_var] + ([op.outputs[5]] if v3 else [])
    fmt = "NHWC" if x.shape.ndims == 4 else "NDHWC"
    out = _ops.make_op(grad_type, ins, _grad_attrs(op, fmt if first else data_format),
                       name=grad_type).outputs
    dx = out[0]
    if first:
        dx = array_ops.transpose(dx, [0, 3, 1, 2] if x.shape.ndims == 4 else [0, 4, 1, 2, 3])
    return [dx, out[1], out[2], None, None]


for _op in _GRAD_OP:
    RegisterGradient(_op)(_fused_batch_norm_grad)


def _batch_norm_grad(grad_y, x, scale, pop_mean, pop_var, epsilon, data_format, is_training):
    """(dx, dscale, doffset) of batch norm from registered ops: TF's _BatchNormGrad."""
    x_dtype = x.dtype.base_dtype
    if x_dtype == dtypes.float16:
        x, grad_y = math_ops.cast(x, dtypes.float32), math_ops.cast(grad_y, dtypes.float32)
    ndims = x.shape.ndims
    first = data_format in ("NCHW", "NCDHW")
    reduce_axis = [0] + list(range(2, ndims)) if first else list(range(ndims - 1))
    shape = [1, -1] + [1] * (ndims - 2)
    if is_training:
        keep = first
        if first:
            scale = array_ops.reshape(scale, shape)
        mean_grad_y = reduction_ops.reduce_mean(grad_y, reduce_axis, keepdims=keep)
        mean_x = reduction_ops.reduce_mean(x, reduce_axis, keepdims=keep)
        var_x = reduction_ops.reduce_mean(
            math_ops.squared_difference(x, array_ops.stop_gradient(mean_x)), reduce_axis,
            keepdims=keep)
        grad_y_offset = grad_y - mean_grad_y
        x_offset = x - mean_x
        mean = reduction_ops.reduce_mean(grad_y * x_offset, reduce_axis, keepdims=keep)
        grad_x = scale * math_ops.rsqrt(var_x + epsilon) * (
            grad_y_offset - math_ops.reciprocal(var_x + epsilon) * mean * x_offset)
        grad_scale = math_ops.rsqrt(var_x + epsilon) * reduction_ops.reduce_sum(
            grad_y * x_offset, reduce_axis, keepdims=keep)
        if first:
            grad_scale = array_ops.reshape(grad_scale, [-1])
        grad_offset = reduction_ops.reduce_sum(grad_y, reduce_axis)
        return math_ops.cast(grad_x, x_dtype), grad_scale, grad_offset
    if first:
        pop_mean, pop_var = array_ops.reshape(pop_mean, shape), array_ops.reshape(pop_var, shape)
        scale = array_ops.reshape(scale, shape)
    grad_offset = reduction_ops.reduce_sum(grad_y, reduce_axis)
    var_rsqrt = math_ops.rsqrt(pop_var + epsilon)
    grad_scale = reduction_ops.reduce_sum(grad_y * (x - pop_mean) * var_rsqrt, reduce_axis)
    grad_x = grad_y * scale * var_rsqrt
    return math_ops.cast(grad_x, x_dtype), grad_scale, grad_offset


def _fused_batch_norm_grad_grad(op, *grads):
    from .gradients import gradients

    grad_y, x, scale, pop_mean, pop_var = op.inputs[:5]
    dx, dscale, doffset = _batch_norm_grad(
        grad_y, x, scale, pop_mean, pop_var, op.get_attr("epsilon"),
        _attr(op, "data_format", "NHWC"), _attr(op, "is_training", True))
    grad_grad_y, grad_x, grad_scale = gradients([dx, dscale, doffset], [grad_y, x, scale],
                                                list(grads[:3]))
    return [grad_grad_y, grad_x, grad_scale, None, None] + ([None] if len(op.inputs) == 6 else [])


for _op in _GRAD_OP.values():
    RegisterGradient(_op)(_fused_batch_norm_grad_grad)
