"""Gradients of the nn ops (TF's rules), including the second-order gradients of the
piecewise-linear activation grads, the conv2d backprops and AvgPoolGrad."""
from __future__ import annotations

import numpy as np

from dtf.framework import ops as _ops
from dtf.framework.op_registry import NotDifferentiable, RegisterGradient
from . import array_ops, math_ops, reduction_ops
from .nn_ops import ACTIVATIONS, log_softmax, softmax


@RegisterGradient("TopKV2")
def _top_k_grad(op, grad_values, grad_indices):
    """Each value's gradient goes back to the input entry it was taken from."""
    x, indices = op.inputs[0], op.outputs[1]
    in_shape = array_ops.shape(x)
    columns = array_ops.gather(in_shape, array_ops.size(in_shape) - 1)
    k = array_ops.gather(array_ops.shape(indices), array_ops.rank(indices) - 1)
    rows = array_ops.reshape(indices, array_ops.stack([-1, k]))
    offsets = array_ops.expand_dims(array_ops.range(0, array_ops.shape(rows)[0]) * columns, 1)
    flat = array_ops.reshape(rows + offsets, [-1])
    scattered = array_ops.unsorted_segment_sum(array_ops.reshape(grad_values, [-1]), flat,
                                               array_ops.size(x))
    return [array_ops.reshape(scattered, in_shape), None]

NotDifferentiable("InTopKV2")


def _same_attrs(op, *names):
    return {k: op.get_attr(k) for k in ("T", *names)}


def _activation_attrs(op):
    return {k: v for k, v in op.attrs.items() if k in ("T", "alpha")}


# -- activations: the grad op reads the incoming gradient and the op's input or output ------------
def _activation_grad(grad_op, reads_output):
    def grad_fn(op, grad):
        source = op.outputs[0] if reads_output else op.inputs[0]
        return [_ops.make_tensor(grad_op, [grad, source], _activation_attrs(op), name=grad_op)]

    return grad_fn


def _linear_grad_grad(op, grad):
    """Grad ops of piecewise-linear activations are linear in the incoming gradient."""
    features = op.inputs[1]
    return [_ops.make_tensor(op.type, [grad, features], _activation_attrs(op), name=op.type),
            array_ops.zeros_like(features)]


for _fn, _op, _grad_op, _reads_output in ACTIVATIONS:
    RegisterGradient(_op)(_activation_grad(_grad_op, _reads_output))
for _grad_op in ("ReluGrad", "Relu6Grad", "LeakyReluGrad"):
    RegisterGradient(_grad_op)(_linear_grad_grad)


# -- softmax ------------------------------------------------------------------------------------------
@RegisterGradient("Softmax")
def _softmax_grad(op, grad):
    y = op.outputs[0]
    return [(grad - reduction_ops.reduce_sum(grad * y, -1, keepdims=True)) * y]


@RegisterGradient("LogSoftmax")
def _log_softmax_grad(op, grad):
    y = math_ops.exp(op.outputs[0])
    return [grad - reduction_ops.reduce_sum(grad, -1, keepdims=True) * y]


def _is_zeros(t):
    if t.op.type == "ZerosLike":
        return True
    return t.op.type == "Const" and not np.any(t.op.get_attr("value"))


def _broadcast_mul(vec, mat):
    """vec [n] times each row of mat [n, k]."""
    return array_ops.expand_dims(vec, -1) * mat


@RegisterGradient("SoftmaxCrossEntropyWithLogits")
def _softmax_xent_grad(op, grad_loss, grad_grad):
    logits = op.inputs[0]
    grad = _broadcast_mul(grad_loss, op.outputs[1])
    if grad_grad is not None and not _is_zeros(grad_grad):
        p = softmax(logits)
        grad += (grad_grad - reduction_ops.reduce_sum(grad_grad * p, -1, keepdims=True)) * p
    return [grad, _broadcast_mul(grad_loss, -log_softmax(logits))]


@RegisterGradient("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_softmax_xent_grad(op, grad_loss, grad_grad):
    return [_broadcast_mul(grad_loss, op.outputs[1]), None]


# -- bias_add, l2_loss --------------------------------------------------------------------------------
@RegisterGradient("BiasAdd")
def _bias_add_grad(op, grad):
    attrs = _same_attrs(op, "data_format")
    return [grad, _ops.make_tensor("BiasAddGrad", [grad], attrs, name="BiasAddGrad")]


@RegisterGradient("BiasAddGrad")
def _bias_add_grad_grad(op, grad):
    x = op.inputs[0]
    nd = x.shape.ndims
    if nd is None:
        raise ValueError("the gradient of BiasAddGrad needs an input of known rank")
    dims = [1] * nd
    dims[1 if op.get_attr("data_format") == "NCHW" else nd - 1] = -1
    return [array_ops.broadcast_to(array_ops.reshape(grad, dims), array_ops.shape(x))]


@RegisterGradient("L2Loss")
def _l2_loss_grad(op, grad):
    return [op.inputs[0] * grad]


# -- conv2d ----------------------------------------------------------------------------------------------
_CONV_ATTRS = ("strides", "padding", "data_format", "dilations", "use_cudnn_on_gpu", "explicit_paddings")


def _conv(op_type, inputs, op):
    return _ops.make_tensor(op_type, inputs, _same_attrs(op, *_CONV_ATTRS), name=op_type)


@RegisterGradient("Conv2D")
def _conv2d_grad(op, grad):
    x, w = op.inputs
    return [_conv("Conv2DBackpropInput", [array_ops.shape(x), w, grad], op),
            _conv("Conv2DBackpropFilter", [x, array_ops.shape(w), grad], op)]


@RegisterGradient("Conv2DBackpropInput")
def _conv2d_backprop_input_grad(op, grad):
    _, w, dy = op.inputs
    return [None, _conv("Conv2DBackpropFilter", [grad, array_ops.shape(w), dy], op),
            _conv("Conv2D", [grad, w], op)]


@RegisterGradient("Conv2DBackpropFilter")
def _conv2d_backprop_filter_grad(op, grad):
    x, _, dy = op.inputs
    return [_conv("Conv2DBackpropInput", [array_ops.shape(x), grad, dy], op), None,
            _conv("Conv2D", [x, grad], op)]


# -- pooling -----------------------------------------------------------------------------------------------
_POOL_ATTRS = ("ksize", "strides", "padding", "data_format")


@RegisterGradient("MaxPool")
def _max_pool_grad(op, grad):
    attrs = _same_attrs(op, *_POOL_ATTRS)
    return [_ops.make_tensor("MaxPoolGrad", [op.inputs[0], op.outputs[0], grad], attrs,
                             name="MaxPoolGrad")]


@RegisterGradient("AvgPool")
def _avg_pool_grad(op, grad):
    attrs = _same_attrs(op, *_POOL_ATTRS)
    return [_ops.make_tensor("AvgPoolGrad", [array_ops.shape(op.inputs[0]), grad], attrs,
                             name="AvgPoolGrad")]


@RegisterGradient("AvgPoolGrad")
def _avg_pool_grad_grad(op, grad):
    attrs = _same_attrs(op, *_POOL_ATTRS)
    return [None, _ops.make_tensor("AvgPool", [grad], attrs, name="AvgPool")]


# -- second order of the smooth activations (TF's rules) ------------------------------------------
@RegisterGradient("EluGrad")
def _elu_grad_grad(op, grad):
    """EluGrad(dy, y) = dy * (y + 1) where y < 0, else dy: linear in dy, and in y on y < 0."""
    elu_x = op.inputs[1]
    return [_ops.make_tensor("EluGrad", [grad, elu_x], _activation_attrs(op), name="EluGrad"),
            math_ops.where(elu_x < 0, grad * op.inputs[0], array_ops.zeros_like(elu_x))]


@RegisterGradient("SoftplusGrad")
def _softplus_grad_grad(op, grad):
    """SoftplusGrad(dy, x) = dy / (1 + exp(-x)): (ddy, d2x) for the incoming ddx."""
    dy, x = op.inputs
    with _ops.control_dependencies([grad]):
        ddy = _ops.make_tensor("SoftplusGrad", [grad, x], _activation_attrs(op), name="SoftplusGrad")
        d2x = grad * dy / (math_ops.exp(-x) + 2.0 + math_ops.exp(x))
    return [ddy, d2x]
