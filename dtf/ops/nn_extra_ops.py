"""More of tf.nn: selu, crelu, swish, local response normalization (lrn),
weighted_cross_entropy_with_logits, log_poisson_loss, relu_layer and zero_fraction, with
TF's gradients."""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import RegisterGradient, register_op
from . import array_ops as A
from . import math_ops as M
from .common import convert, same_as_input

__all__ = ["selu", "crelu", "swish", "lrn", "local_response_normalization",
           "weighted_cross_entropy_with_logits", "log_poisson_loss", "relu_layer", "zero_fraction"]

for _op in ("Selu", "SeluGrad", "LRNGrad"):
    register_op(_op)(same_as_input)


@register_op("LRN")
def _lrn_infer(inputs, attrs):
    x = inputs[0]
    if x.shape.ndims not in (None, 4):
        raise ValueError(f"Shape must be rank 4 but is rank {x.shape.ndims} for "
                         f"'{attrs.get('_op_name', 'LRN')}' (op: 'LRN')")
    return same_as_input(inputs, attrs)


def selu(features, name=None):
    """scale * (features if > 0 else alpha * (exp(features) - 1)), with SELU's constants."""
    with _ops.name_scope(name, "Selu", [features]) as scope:
        features = convert(features, "features")
        return _ops.make_tensor("Selu", [features], {"T": features.dtype}, name=scope)


def crelu(features, name=None, axis=-1):
    """relu of [features, -features] concatenated along ``axis`` (twice the channels)."""
    from .nn_ops import relu

    with _ops.name_scope(name, "CRelu", [features]) as scope:
        features = convert(features, "features")
        return relu(A.concat([features, -features], axis, name=scope))


def lrn(input, depth_radius=5, bias=1.0, alpha=1.0, beta=0.5, name=None):  # noqa: A002
    """Local response normalization over the last dimension of a 4-D ``input``:
    x / (bias + alpha * sum(x^2 over depth_radius neighbours each side)) ** beta."""
    with _ops.name_scope(name, "LRN", [input]) as scope:
        x = convert(input, "input")
        if x.dtype not in (dtypes.float16, dtypes.float32):
            raise TypeError(f"Value passed to parameter 'input' has DataType {x.dtype.name} not in "
                            "list of allowed values: float16, float32")
        attrs = {"T": x.dtype, "depth_radius": int(depth_radius), "bias": float(bias),
                 "alpha": float(alpha), "beta": float(beta)}
        return _ops.make_tensor("LRN", [x], attrs, name=scope)


local_response_normalization = lrn


def weighted_cross_entropy_with_logits(labels=None, logits=None, pos_weight=None, name=None,
                                       targets=None):
    """Sigmoid cross-entropy with the positive term weighted by ``pos_weight``:
    (1 - z) * x + (1 + (q - 1) * z) * log(1 + exp(-x)), in TF's stable form."""
    from .nn_ops import relu

    if labels is not None and targets is not None:
        raise ValueError("Cannot specify both 'labels' and 'targets'")
    labels = targets if labels is None else labels
    if labels is None or logits is None or pos_weight is None:
        raise ValueError("labels, logits and pos_weight must all be given")
    with _ops.name_scope(name, "logistic_loss", [logits, labels]) as scope:
        logits = convert(logits, "logits")
        labels = convert(labels, "labels")
        if not labels.shape.is_compatible_with(logits.shape):
            raise ValueError(f"`logits` and `labels` must have the same shape, received "
                             f"({logits.shape} vs {labels.shape}).")
        log_weight = 1 + (pos_weight - 1) * labels
        return M.add((1 - labels) * logits,
                     log_weight * (M.log1p(M.exp(-M.abs(logits))) + relu(-logits)), name=scope)


def swish(features, beta=1.0):
    """features * sigmoid(beta * features)."""
    with _ops.name_scope(None, "swish", [features]):
        features = convert(features, "features")
        return features * M.sigmoid(beta * features if beta != 1.0 else features)


def log_poisson_loss(targets, log_input, compute_full_loss=False, name=None):
    """exp(log_input) - log_input * targets, plus Stirling's approximation of log(targets!)
    (for targets > 1) when ``compute_full_loss``."""
    import math

    with _ops.name_scope(name, "log_poisson_loss", [log_input, targets]):
        log_input = convert(log_input, "log_input")
        targets = convert(targets, "targets")
        if not targets.shape.is_compatible_with(log_input.shape):
            raise ValueError(f"`log_input` and `targets` must have the same shape, received "
                             f"({log_input.shape} vs {targets.shape}).")
        result = M.exp(log_input) - log_input * targets
        if compute_full_loss:
            half, two_pi = (M.cast(v, targets.dtype) for v in (0.5, 2 * math.pi))
            stirling = targets * M.log(targets) - targets + half * M.log(two_pi * targets)
            zeros, ones = A.zeros_like(targets), A.ones_like(targets)
            small = M.logical_and(M.greater_equal(targets, zeros), M.less_equal(targets, ones))
            result += M.where(small, zeros, stirling)
        return result


def relu_layer(x, weights, biases, name=None):
    """relu(matmul(x, weights) + biases)."""
    from .nn_ops import relu, xw_plus_b

    with _ops.name_scope(name, "relu_layer", [x, weights, biases]) as scope:
        return relu(xw_plus_b(x, weights, biases), name=scope)


def zero_fraction(value, name=None):
    """The fraction of entries of ``value`` that are zero, as a float32 scalar."""
    from .reduction_ops import count_nonzero

    with _ops.name_scope(name, "zero_fraction", [value]):
        value = convert(value, "value")
        size = A.size(value, out_type=dtypes.int64)
        num_nonzero = count_nonzero(value, dtype=dtypes.int64)
        with _ops.name_scope("counts_to_fraction"):
            fraction = M.cast(size - num_nonzero, dtypes.float32) / M.cast(size, dtypes.float32)
        return A.identity(fraction, "fraction")


# -- gradients (TF's rules) ----------------------------------------------------------------
def _selu_grad_op(grad, outputs):
    return _ops.make_tensor("SeluGrad", [grad, outputs], {"T": grad.dtype}, name="SeluGrad")


@RegisterGradient("Selu")
def _selu_grad(op, grad):
    return [_selu_grad_op(grad, op.outputs[0])]


@RegisterGradient("SeluGrad")
def _selu_grad_grad(op, grad):
    y = op.inputs[1]
    return [_selu_grad_op(grad, y), M.where(M.less(y, M.cast(0, y.dtype)), grad * op.inputs[0],
                                            A.zeros_like(y))]


@RegisterGradient("LRN")
def _lrn_grad(op, grad):
    attrs = {k: op.get_attr(k) for k in ("T", "depth_radius", "bias", "alpha", "beta")}
    return [_ops.make_tensor("LRNGrad", [grad, op.inputs[0], op.outputs[0]], attrs, name="LRNGrad")]
