"""Gradients of Conv3D, DepthwiseConv2dNative (each with its two backprops, so second
order works), the 3-D pools and the max-pool gradient ops (2-D and 3-D): TF's rules."""
from __future__ import annotations

from dtf.framework import ops as _ops
from dtf.framework.op_registry import RegisterGradient
from . import array_ops

_CONV_ATTRS = ("T", "strides", "padding", "data_format", "dilations")
_POOL_ATTRS = ("T", "ksize", "strides", "padding", "data_format")


def _make(op_type, inputs, op, keys):
    return _ops.make_tensor(op_type, inputs, {k: op.get_attr(k) for k in keys}, name=op_type)


def _register_conv_family(forward, backprop_input, backprop_filter):
    """The three ops of one convolution are each other's gradients."""
    def conv(inputs, op):
        return _make(forward, inputs, op, _CONV_ATTRS)

    def b_input(inputs, op):
        return _make(backprop_input, inputs, op, _CONV_ATTRS)

    def b_filter(inputs, op):
        return _make(backprop_filter, inputs, op, _CONV_ATTRS)

    @RegisterGradient(forward)
    def _forward_grad(op, grad):
        x, w = op.inputs
        return [b_input([array_ops.shape(x), w, grad], op),
                b_filter([x, array_ops.shape(w), grad], op)]

    @RegisterGradient(backprop_input)
    def _backprop_input_grad(op, grad):
        _, w, dy = op.inputs
        return [None, b_filter([grad, array_ops.shape(w), dy], op), conv([grad, w], op)]

    @RegisterGradient(backprop_filter)
    def _backprop_filter_grad(op, grad):
        x, _, dy = op.inputs
        return [b_input([array_ops.shape(x), grad, dy], op), None, conv([x, grad], op)]


_register_conv_family("Conv3D", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2")
_register_conv_family("DepthwiseConv2dNative", "DepthwiseConv2dNativeBackpropInput",
                      "DepthwiseConv2dNativeBackpropFilter")


@RegisterGradient("MaxPool3D")
def _max_pool3d_grad(op, grad):
    return [_make("MaxPool3DGrad", [op.inputs[0], op.outputs[0], grad], op, _POOL_ATTRS)]


@RegisterGradient("AvgPool3D")
def _avg_pool3d_grad(op, grad):
    return [_make("AvgPool3DGrad", [array_ops.shape(op.inputs[0]), grad], op, _POOL_ATTRS)]


@RegisterGradient("AvgPool3DGrad")
def _avg_pool3d_grad_grad(op, grad):
    return [None, _make("AvgPool3D", [grad], op, _POOL_ATTRS)]


def _max_pool_grad_grad(grad_grad_op):
    """MaxPool(3D)Grad is linear in its dy: the gradient routes back through the windows'
    maxima (MaxPool(3D)GradGrad); none reaches the pool's input and output."""
    def grad_fn(op, grad):
        x, y, _ = op.inputs
        return [array_ops.zeros_like(x), array_ops.zeros_like(y),
                _make(grad_grad_op, [x, y, grad], op, _POOL_ATTRS)]

    return grad_fn


def _max_pool_grad_grad_grad(grad_op):
    """MaxPool(3D)GradGrad is linear in its grad: its gradient is the pool's gradient op."""
    def grad_fn(op, grad):
        x, y, _ = op.inputs
        return [array_ops.zeros_like(x), array_ops.zeros_like(y),
                _make(grad_op, [x, y, grad], op, _POOL_ATTRS)]

    return grad_fn


for _pool_grad, _grad_grad in (("MaxPoolGrad", "MaxPoolGradGrad"),
                               ("MaxPool3DGrad", "MaxPool3DGradGrad")):
    RegisterGradient(_pool_grad)(_max_pool_grad_grad(_grad_grad))
    RegisterGradient(_grad_grad)(_max_pool_grad_grad_grad(_pool_grad))
