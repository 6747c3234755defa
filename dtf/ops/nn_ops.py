"""tf.nn: activations, softmax and cross-entropies, bias_add, l2_loss, dropout, conv2d and
pooling (NHWC), moments and in_top_k.

Constructors keep TF1's signatures, default op names and name scopes; shape inference
raises ValueError naming the op and its input shapes, as TF does at graph construction.
"""
from __future__ import annotations

import collections
import numbers

import numpy as np

from dtf.framework import dtypes, errors
from dtf.framework.common_shapes import window_geometry
from dtf.framework import ops as _ops
from dtf.framework.op_registry import register_op
from dtf.framework.tensor_shape import TensorShape, unknown_shape
from . import array_ops, math_ops, reduction_ops
from .common import const_value, convert, fmt_shape, same_as_input, shape_from_tensor
from .math_ops import sigmoid, tanh

__all__ = ["relu", "relu6", "leaky_relu", "elu", "softplus", "softsign", "sigmoid", "tanh",
           "softmax", "log_softmax", "bias_add", "xw_plus_b", "l2_loss", "dropout",
           "softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits_v2",
           "sparse_softmax_cross_entropy_with_logits", "sigmoid_cross_entropy_with_logits",
           "conv2d", "conv2d_transpose", "max_pool", "avg_pool", "moments", "in_top_k",
           "l2_normalize", "top_k"]


def _shape_error(attrs, inputs, rule):
    op_type = attrs.get("_op_type", "")
    name = attrs.get("_op_name", op_type)
    return ValueError(f"{rule} for '{name}' (op: '{op_type}') with input shapes: "
                      f"{', '.join(fmt_shape(t.shape) for t in inputs)}.")


def _dims(t, rank, attrs, inputs, exact=True):
    """Static dims of ``t`` (None where unknown) after checking its rank."""
    nd = t.shape.ndims
    if nd is None:
        return [None] * rank if exact else None
    if (nd != rank) if exact else (nd < rank):
        rule = f"Shape must be {'' if exact else 'at least '}rank {rank} but is rank {nd}"
        raise _shape_error(attrs, inputs, rule)
    return list(t.shape.as_tuple_or_none())


def _merge(a, b, attrs, inputs):
    if a is not None and b is not None and a != b:
        raise _shape_error(attrs, inputs, f"Dimensions must be equal, but are {a} and {b}")
    return a if a is not None else b


def _register(op_type, infer):
    """Registers ``infer`` with the op type available to its error messages."""
    register_op(op_type)(lambda inputs, attrs: infer(inputs, {**attrs, "_op_type": op_type}))


# -- activations --------------------------------------------------------------------------------
# (public name, op type, gradient op type, whether the gradient op reads the op's output)
# Which tensor each gradient reads is TF 1.15's choice (nn_grad.py), and it matters beyond
# the graph's shape: a relu whose gradient reads its output leaves its input to the relu
# alone, so a conv/matmul + bias + relu chain fuses into one tail (dtf.runtime.fusion).
ACTIVATIONS = [
    ("relu", "Relu", "ReluGrad", True), ("relu6", "Relu6", "Relu6Grad", True),
    ("elu", "Elu", "EluGrad", True), ("softplus", "Softplus", "SoftplusGrad", False),
    ("softsign", "Softsign", "SoftsignGrad", False),
    ("leaky_relu", "LeakyRelu", "LeakyReluGrad", False),
]
for _fn, _op, _grad_op, _ in ACTIVATIONS:
    register_op(_op)(same_as_input)
    register_op(_grad_op)(same_as_input)


def _make_activation(op_type):
    def fn(features, name=None):
        features = convert(features, "features")
        return _ops.make_tensor(op_type, [features], {"T": features.dtype}, name=name or op_type)

    fn.__name__ = op_type.lower()
    return fn


_g = globals()
for _fn, _op, _, _ in ACTIVATIONS:
    if _op != "LeakyRelu":  # takes alpha: defined below
        _g[_fn] = _make_activation(_op)


def leaky_relu(features, alpha=0.2, name=None):
    """max(features, alpha * features); integer features are computed in float32 (TF1)."""
    with _ops.name_scope(name, "LeakyRelu", [features, alpha]) as scope:
        features = convert(features, "features")
        if features.dtype.is_integer:
            features = math_ops.cast(features, dtypes.float32)
        alpha = float(np.asarray(alpha).item())
        return _ops.make_tensor("LeakyRelu", [features], {"T": features.dtype, "alpha": alpha},
                                name=scope)


# -- softmax ------------------------------------------------------------------------------------
def _at_least_rank1(inputs, attrs):
    _dims(inputs[0], 1, attrs, inputs, exact=False)
    return same_as_input(inputs, attrs)


_register("Softmax", _at_least_rank1)
_register("LogSoftmax", _at_least_rank1)


def _axis_lookup(axis, dim):
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    return -1 if axis is None and dim is None else (axis if axis is not None else dim)


def _softmax(op_type, logits, axis, name):
    """The op works on the last axis; another axis is swapped to the end and back (TF)."""
    logits = convert(logits, "logits")
    nd = logits.shape.ndims
    if axis == -1 or (nd is not None and axis == nd - 1):
        return _ops.make_tensor(op_type, [logits], {"T": logits.dtype}, name=name or op_type)
    if nd is None:
        raise ValueError(f"{op_type} over axis {axis} needs an input of known rank")
    if not -nd <= axis < nd:
        raise errors.InvalidArgumentError(
            None, None, f"Dimension ({axis}) must be in the range [{-nd}, {nd}) where {nd} is the "
            "number of dimensions in the input.")
    perm = list(range(nd))
    perm[axis % nd], perm[-1] = nd - 1, axis % nd
    out = _ops.make_tensor(op_type, [array_ops.transpose(logits, perm)], {"T": logits.dtype},
                           name=op_type)
    return array_ops.transpose(out, perm, name=name or "transpose")


def softmax(logits, axis=None, name=None, dim=None):
    return _softmax("Softmax", logits, _axis_lookup(axis, dim), name)


def log_softmax(logits, axis=None, name=None, dim=None):
    return _softmax("LogSoftmax", logits, _axis_lookup(axis, dim), name)


def log_sigmoid(x, name=None):
    """log(sigmoid(x)), computed as -softplus(-x) so that it stays finite for large |x|."""
    with _ops.name_scope(name, "LogSigmoid", [x]):
        x = convert(x, "x")
        return -softplus(-x)


def l2_normalize(x, axis=None, epsilon=1e-12, name=None, dim=None):
    """x / sqrt(max(sum(x**2, axis), epsilon)), as TF's tf.nn.l2_normalize."""
    from .reduction_ops import reduce_sum

    axis = _axis_lookup(axis, dim) if axis is not None or dim is not None else None
    with _ops.name_scope(name, "l2_normalize", [x]):
        x = convert(x, "x")
        square_sum = reduce_sum(math_ops.square(x), axis, keepdims=True)
        return x * math_ops.rsqrt(math_ops.maximum(square_sum, math_ops.cast(epsilon, x.dtype)))


# -- bias_add, l2_loss ----------------------------------------------------------------------------
def _channel_axis(attrs, ndims):
    return 1 if attrs.get("data_format", "NHWC") == "NCHW" else ndims - 1


def _bias_add_infer(inputs, attrs):
    x, b = inputs
    (c,) = _dims(b, 1, attrs, inputs)
    dims = _dims(x, 2, attrs, inputs, exact=False)
    if dims is None:
        return [(x.dtype, x.shape)]
    axis = _channel_axis(attrs, len(dims))
    dims[axis] = _merge(dims[axis], c, attrs, inputs)
    return [(x.dtype, TensorShape(dims))]


def _bias_add_grad_infer(inputs, attrs):
    dims = _dims(inputs[0], 2, attrs, inputs, exact=False)
    c = None if dims is None else dims[_channel_axis(attrs, len(dims))]
    return [(inputs[0].dtype, TensorShape([c]))]


_register("BiasAdd", _bias_add_infer)
_register("BiasAddGrad", _bias_add_grad_infer)


def _data_format(data_format):
    if data_format is None or (data_format.startswith("N") and data_format.endswith("C")):
        return "NHWC"
    if data_format.startswith("NC"):
        return "NCHW"
    raise ValueError("data_format must be of the form `N...C` or `NC...`")


def bias_add(value, bias, data_format=None, name=None):
    """value + bias, bias broadcast along the channel dimension (last for NHWC)."""
    with _ops.name_scope(name, "BiasAdd", [value, bias]) as scope:
        value = convert(value, "input")
        bias = convert(bias, "bias", dtype=value.dtype)
        return _ops.make_tensor("BiasAdd", [value, bias],
                                {"T": value.dtype, "data_format": _data_format(data_format)},
                                name=scope)


def xw_plus_b(x, weights, biases, name=None):
    """matmul(x, weights) + biases."""
    from .linalg_ops import matmul

    with _ops.name_scope(name, "xw_plus_b", [x, weights, biases]) as scope:
        return bias_add(matmul(x, weights), biases, name=scope)


register_op("L2Loss")(lambda inputs, attrs: [(inputs[0].dtype, TensorShape([]))])


def l2_loss(t, name=None):
    """sum(t ** 2) / 2."""
    t = convert(t, "t")
    return _ops.make_tensor("L2Loss", [t], {"T": t.dtype}, name=name or "L2Loss")


# -- dropout --------------------------------------------------------------------------------------
def dropout(x, keep_prob=None, noise_shape=None, seed=None, name=None, rate=None):
    """Keeps each element with probability keep_prob (= 1 - rate), scaled by 1 / keep_prob."""
    try:
        keep = 1.0 - keep_prob if keep_prob is not None else None
    except TypeError:
        raise ValueError(f"keep_prob must be a floating point number or Tensor (got {keep_prob!r})") from None
    if rate is not None and keep is not None:
        raise ValueError("Cannot specify both 'rate' and 'keep_prob'")
    rate = keep if rate is None else rate
    if rate is None:
        raise ValueError("You must provide a rate to dropout.")
    from .random_ops import random_uniform

    with _ops.name_scope(name, "dropout", [x]):
        x = convert(x, "x")
        if not x.dtype.is_floating:
            raise ValueError("x has to be a floating point tensor since it's going to be scaled. "
                             f"Got a {x.dtype.name} tensor instead.")
        if isinstance(rate, numbers.Real):
            if not 0 <= rate < 1:
                raise ValueError(f"rate must be a scalar tensor or a float in the range [0, 1), got {rate:g}")
            if rate == 0:
                return x
        rate = convert(rate, "rate", dtype=x.dtype)
        if not rate.shape.is_compatible_with(TensorShape([])):
            raise ValueError(f"Shape must be rank 0 but is rank {rate.shape.ndims} (rate)")
        shape = array_ops.shape(x) if noise_shape is None else _noise_shape(x, noise_shape)
        keep_mask = math_ops.greater_equal(random_uniform(shape, seed=seed, dtype=x.dtype), rate)
        scale = 1 / (1 - rate)
        ret = x * scale * math_ops.cast(keep_mask, x.dtype)
        ret.set_shape(x.shape)
        return ret


def _noise_shape(x, noise_shape):
    """noise_shape with None entries taken from x's static shape (TF's _get_noise_shape)."""
    if isinstance(noise_shape, _ops.Tensor):
        return noise_shape
    dims = list(noise_shape)
    x_dims = x.shape.as_tuple_or_none()
    if x_dims is not None and len(dims) == len(x_dims):
        dims = [xd if d is None else d for d, xd in zip(dims, x_dims)]
    return dims


# -- cross-entropies ----------------------------------------------------------------------------------
def _xent_infer(inputs, attrs):
    logits, labels = inputs
    a, b = _dims(logits, 2, attrs, inputs), _dims(labels, 2, attrs, inputs)
    dims = [_merge(x, y, attrs, inputs) for x, y in zip(a, b)]
    return [(logits.dtype, TensorShape(dims[:1])), (logits.dtype, TensorShape(dims))]


def _sparse_xent_infer(inputs, attrs):
    logits, labels = inputs
    (n, c), (m,) = _dims(logits, 2, attrs, inputs), _dims(labels, 1, attrs, inputs)
    n = _merge(n, m, attrs, inputs)
    return [(logits.dtype, TensorShape([n])), (logits.dtype, TensorShape([n, c]))]


_register("SoftmaxCrossEntropyWithLogits", _xent_infer)
_register("SparseSoftmaxCrossEntropyWithLogits", _sparse_xent_infer)


def _ensure_xent_args(name, sentinel, labels, logits):
    if sentinel is not None:
        raise ValueError(f"Only call `{name}` with named arguments (labels=..., logits=..., ...)")
    if labels is None or logits is None:
        raise ValueError("Both labels and logits must be provided.")


def _leading_shape(t):
    """The shape of t without its last dimension: a list when known, else a tensor."""
    dims = t.shape.as_tuple_or_none()
    if dims is not None and None not in dims[:-1]:
        return list(dims[:-1])
    return array_ops.shape(t)[:-1]


def _rows(t):
    """t as a matrix with its last dimension as columns."""
    if t.shape.ndims == 2:
        return t
    last = t.shape.as_tuple_or_none()[-1] if t.shape.ndims else None
    return array_ops.reshape(t, [-1, last if last is not None else array_ops.shape(t)[-1]])


def softmax_cross_entropy_with_logits_v2(_sentinel=None, labels=None, logits=None, axis=None,
                                         name=None, dim=None):
    """-sum(labels * log_softmax(logits)) along ``axis``; gradients flow into labels too."""
    _ensure_xent_args("softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    axis = _axis_lookup(axis, dim)
    with _ops.name_scope(name, "softmax_cross_entropy_with_logits", [logits, labels]) as scope:
        logits = convert(logits, "logits")
        labels = math_ops.cast(convert(labels, "labels"), logits.dtype)
        nd = logits.shape.ndims
        if nd is None:
            raise ValueError("softmax_cross_entropy_with_logits needs logits of known rank")
        if axis % nd != nd - 1:
            perm = list(range(nd))
            perm[axis % nd], perm[-1] = nd - 1, axis % nd
            logits, labels = array_ops.transpose(logits, perm), array_ops.transpose(labels, perm)
        if not logits.shape.is_compatible_with(labels.shape):
            raise ValueError(f"logits and labels must have the same shape "
                             f"({logits.shape} vs {labels.shape})")
        op = _ops.make_op("SoftmaxCrossEntropyWithLogits", [_rows(logits), _rows(labels)],
                          {"T": logits.dtype}, name=scope if nd == 2 else None)
        if nd == 2:
            return op.outputs[0]
        return array_ops.reshape(op.outputs[0], _leading_shape(logits), name=scope)


def softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, dim=-1, name=None,
                                      axis=None):
    """TF1's version: like _v2 but no gradient flows into labels."""
    _ensure_xent_args("softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    with _ops.name_scope(name, "softmax_cross_entropy_with_logits_sg", [logits, labels]) as scope:
        labels = array_ops.stop_gradient(labels, name="labels_stop_gradient")
    return softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits,
                                                axis=dim if axis is None else axis, name=scope)


def sparse_softmax_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    """-log_softmax(logits)[label] per row; labels are class indices."""
    _ensure_xent_args("sparse_softmax_cross_entropy_with_logits", _sentinel, labels, logits)
    with _ops.name_scope(name, "SparseSoftmaxCrossEntropyWithLogits", [labels, logits]):
        labels = convert(labels, "labels")
        logits = convert(logits, "logits")
        ls, gs = labels.shape, logits.shape
        if gs.ndims == 0:
            raise ValueError(f"Logits cannot be scalars - received shape {gs}.")
        if gs.ndims is not None and ls.ndims is not None and ls.ndims != gs.ndims - 1:
            raise ValueError(f"Rank mismatch: Rank of labels (received {ls.ndims}) should equal rank "
                             f"of logits minus 1 (received {gs.ndims}).")
        if ls.is_fully_defined() and gs.ndims is not None and \
                TensorShape(gs.as_tuple_or_none()[:-1]).is_fully_defined() and \
                ls.as_list() != list(gs.as_tuple_or_none()[:-1]):
            raise ValueError(f"Shape mismatch: The shape of labels (received {ls}) should equal the "
                             f"shape of logits except for the last dimension (received {gs}).")
        op_name = name or "SparseSoftmaxCrossEntropyWithLogits"
        if gs.ndims == 2:
            return _ops.make_op("SparseSoftmaxCrossEntropyWithLogits", [logits, labels],
                                {"T": logits.dtype, "Tlabels": labels.dtype}, name=op_name).outputs[0]
        labels_shape = array_ops.shape(labels)
        op = _ops.make_op("SparseSoftmaxCrossEntropyWithLogits",
                          [_rows(logits), array_ops.reshape(labels, [-1])],
                          {"T": logits.dtype, "Tlabels": labels.dtype}, name=op_name)
        return array_ops.reshape(op.outputs[0], labels_shape)


def sigmoid_cross_entropy_with_logits(_sentinel=None, labels=None, logits=None, name=None):
    """max(x, 0) - x * z + log(1 + exp(-|x|)): TF's formula, stable for any logit."""
    _ensure_xent_args("sigmoid_cross_entropy_with_logits", _sentinel, labels, logits)
    with _ops.name_scope(name, "logistic_loss", [logits, labels]) as scope:
        logits = convert(logits, "logits")
        labels = convert(labels, "labels", dtype=logits.dtype)
        if not logits.shape.is_compatible_with(labels.shape):
            raise ValueError(f"logits and labels must have the same shape ({logits.shape} vs "
                             f"{labels.shape})")
        zeros = array_ops.zeros_like(logits, dtype=logits.dtype)
        cond = math_ops.greater_equal(logits, zeros)
        relu_logits = math_ops.where(cond, logits, zeros)
        neg_abs_logits = math_ops.where(cond, -logits, logits)
        return math_ops.add(relu_logits - logits * labels,
                            math_ops.log1p(math_ops.exp(neg_abs_logits)), name=scope)


# -- conv2d and pooling ----------------------------------------------------------------------------
_PADDINGS = ("SAME", "VALID")


def _get_sequence(value, n, name):
    """An int, n ints or n + 2 ints as the n + 2 NHWC values (TF's _get_sequence)."""
    if value is None:
        value = [1]
    elif isinstance(value, numbers.Integral):
        value = [value]
    value = [int(v) for v in value]
    if len(value) == n + 2:
        return value
    if len(value) not in (1, n):
        raise ValueError(f"{name} should be of length 1, {n} or {n + 2} but was {len(value)}")
    return [1] + (value * n if len(value) == 1 else value) + [1]


def _window_attrs(dtype, strides, padding, data_format, **extra):
    """Attrs of a conv or pool op, validated like TF's attr checks."""
    if data_format not in (None, "NHWC"):
        raise ValueError(f"data_format {data_format!r} is not supported: only NHWC runs on CPU")
    if padding not in _PADDINGS:
        raise ValueError(f"Value for attr 'padding' of \"{padding}\" is not in the list of allowed "
                         f"values: \"SAME\", \"VALID\"")
    strides = _get_sequence(strides, 2, "strides")
    if strides[0] != 1 or strides[3] != 1:
        raise ValueError("Current implementation does not yet support strides in the batch and "
                         "depth dimensions.")
    return {"T": dtype, "strides": strides, "padding": padding, "data_format": "NHWC", **extra}


def _spatial_out(dims, k_hw, attrs, inputs):
    """Output height and width (None where unknown); VALID windows must fit (TF's check).
    Any number of spatial dims: one per entry of ``k_hw``."""
    out = []
    for i in range(len(k_hw)):
        size, k, s = dims[1 + i], k_hw[i], attrs["strides"][1 + i]
        if size is None or k is None:
            out.append(None)
            continue
        if attrs["padding"] == "VALID" and size < k:
            raise _shape_error(attrs, inputs, f"Computed output size would be negative: {size - k} "
                               f"[input_size: {size}, effective_filter_size: {k}, stride: {s}]")
        out.append(window_geometry(size, k, s, attrs["padding"])[0])
    return out


def _conv_dims(x_dims, w_dims, attrs, inputs):
    ci, fci = x_dims[3], w_dims[2]
    if ci is not None and fci is not None and ci != fci:
        raise _shape_error(attrs, inputs, f"Depth of input ({ci}) is not a multiple of input depth "
                           f"of filter ({fci})")
    oh, ow = _spatial_out(x_dims, w_dims[:2], attrs, inputs)
    return TensorShape([x_dims[0], oh, ow, w_dims[3]])


def _conv2d_infer(inputs, attrs):
    x, w = inputs
    return [(x.dtype, _conv_dims(_dims(x, 4, attrs, inputs), _dims(w, 4, attrs, inputs), attrs, inputs))]


def _sized_infer(sizes_pos, like_pos):
    """Backprop ops: the output shape is given by a sizes input (static when it is known)."""
    def infer(inputs, attrs):
        shape = shape_from_tensor(inputs[sizes_pos], rank_hint=4)
        _dims(inputs[like_pos], 4, attrs, inputs)
        return [(inputs[like_pos].dtype, shape.merge_with(unknown_shape(4)))]

    return infer


_register("Conv2D", _conv2d_infer)
_register("Conv2DBackpropInput", _sized_infer(0, 1))
_register("Conv2DBackpropFilter", _sized_infer(1, 0))


def conv2d(input, filter=None, strides=None, padding=None, use_cudnn_on_gpu=True,  # noqa: A002
           data_format="NHWC", dilations=(1, 1, 1, 1), name=None, filters=None):
    """2-D convolution of NHWC ``input`` with an [h, w, in, out] filter."""
    if filter is not None and filters is not None:
        raise ValueError("Cannot specify both 'filters' and 'filter'")
    filter = filters if filter is None else filter  # noqa: A001
    from .nn_conv_ops import _dilations, dilate_filter  # here: that module imports this one

    rates = _dilations(dilations, 2, _get_sequence(strides, 2, "strides"))
    with _ops.name_scope(name, "Conv2D", [input, filter]) as scope:
        input = convert(input, "input")  # noqa: A001
        filter = dilate_filter(convert(filter, "filter", dtype=input.dtype), rates)  # noqa: A001
        attrs = _window_attrs(input.dtype, strides, padding, data_format,
                              use_cudnn_on_gpu=bool(use_cudnn_on_gpu), dilations=[1, 1, 1, 1],
                              explicit_paddings=[])
        return _ops.make_tensor("Conv2D", [input, filter], attrs, name=scope)


def conv2d_transpose(value=None, filter=None, output_shape=None, strides=None, padding="SAME",  # noqa: A002
                     data_format="NHWC", name=None, input=None, filters=None, dilations=None):
    """The gradient of conv2d with respect to its input, used as an upsampling layer."""
    value = input if value is None else value
    filter = filters if filter is None else filter  # noqa: A001
    if _get_sequence(dilations, 2, "dilations") != [1, 1, 1, 1]:
        raise ValueError("conv2d_transpose supports only dilations of 1")
    with _ops.name_scope(name, "conv2d_transpose", [value, filter, output_shape]) as scope:
        value = convert(value, "value")
        filter = convert(filter, "filter", dtype=value.dtype)  # noqa: A001
        output_shape = convert(output_shape, "output_shape", hint=dtypes.int32)
        fc, vc = _last_dim(filter), _last_dim(value)
        if fc is not None and vc is not None and fc != vc:
            raise ValueError(f"input channels does not match filter's input channels, {vc} != {fc}")
        attrs = _window_attrs(value.dtype, strides, padding, data_format, use_cudnn_on_gpu=True,
                              dilations=[1, 1, 1, 1], explicit_paddings=[])
        return _ops.make_tensor("Conv2DBackpropInput", [output_shape, filter, value], attrs, name=scope)


def _last_dim(t):
    dims = t.shape.as_tuple_or_none()
    return dims[-1] if dims else None


def _pool_infer(inputs, attrs):
    x = inputs[0]
    dims = _dims(x, 4, attrs, inputs)
    oh, ow = _spatial_out(dims, attrs["ksize"][1:3], attrs, inputs)
    return [(x.dtype, TensorShape([dims[0], oh, ow, dims[3]]))]


_register("MaxPool", _pool_infer)
_register("AvgPool", _pool_infer)
_register("MaxPoolGrad", lambda inputs, attrs: [(inputs[0].dtype, inputs[0].shape)])
_register("AvgPoolGrad", _sized_infer(0, 1))


def _pool_attrs(dtype, ksize, strides, padding, data_format):
    ksize = _get_sequence(ksize, 2, "ksize")
    if ksize[0] != 1 or ksize[3] != 1:
        raise ValueError("Pooling is not yet supported on the batch or depth dimensions.")
    return _window_attrs(dtype, strides, padding, data_format, ksize=ksize)


def _make_pool(op_type):
    def fn(value, ksize, strides, padding, data_format="NHWC", name=None, input=None):  # noqa: A002
        value = input if value is None else value
        with _ops.name_scope(name, op_type, [value]) as scope:
            value = convert(value, "input")
            attrs = _pool_attrs(value.dtype, ksize, strides, padding, data_format)
            return _ops.make_tensor(op_type, [value], attrs, name=scope)

    fn.__name__ = op_type
    return fn


max_pool = _make_pool("MaxPool")
avg_pool = _make_pool("AvgPool")


# -- moments, in_top_k ---------------------------------------------------------------------------
def moments(x, axes, shift=None, name=None, keep_dims=None, keepdims=None):
    """(mean, variance) of x over ``axes``."""
    if keep_dims is not None and keepdims is not None:
        raise ValueError("Cannot specify both 'keepdims' and 'keep_dims'")
    keep = bool(keepdims if keepdims is not None else keep_dims)
    with _ops.name_scope(name, "moments", [x, axes]):
        x = convert(x, "x")
        y = math_ops.cast(x, dtypes.float32) if x.dtype == dtypes.float16 else x
        mean = reduction_ops.reduce_mean(y, axes, keepdims=True, name="mean")
        variance = reduction_ops.reduce_mean(
            math_ops.squared_difference(y, array_ops.stop_gradient(mean)), axes, keepdims=True,
            name="variance")
        if not keep:
            mean, variance = array_ops.squeeze(mean, axes), array_ops.squeeze(variance, axes)
        if x.dtype == dtypes.float16:
            return math_ops.cast(mean, dtypes.float16), math_ops.cast(variance, dtypes.float16)
        return mean, variance


def _in_top_k_infer(inputs, attrs):
    predictions, targets, k = inputs
    (n, _), (m,) = _dims(predictions, 2, attrs, inputs), _dims(targets, 1, attrs, inputs)
    _dims(k, 0, attrs, inputs)
    return [(dtypes.bool, TensorShape([_merge(n, m, attrs, inputs)]))]


_register("InTopKV2", _in_top_k_infer)


def in_top_k(predictions, targets, k, name=None):
    """Whether each target class is among the k largest predictions of its row."""
    with _ops.name_scope(name, "in_top_k"):
        predictions = convert(predictions, "predictions", dtype=dtypes.float32)
        targets = convert(targets, "targets", hint=dtypes.int32)
        k = convert(k, "k", dtype=targets.dtype)
        return _ops.make_tensor("InTopKV2", [predictions, targets, k], {"T": targets.dtype},
                                name=name or "InTopKV2")


def _top_k_infer(inputs, attrs):
    x, k = inputs
    dims = _dims(x, 1, attrs, inputs, exact=False)
    _dims(k, 0, attrs, inputs)
    kv = const_value(k)
    if kv is not None and (int(kv) < 0 or dims is not None and dims[-1] is not None
                           and int(kv) > dims[-1]):
        raise _shape_error(attrs, inputs, f"input must have at least k={int(kv)} columns")
    if dims is None:
        return [(x.dtype, unknown_shape()), (dtypes.int32, unknown_shape())]
    shape = TensorShape(dims[:-1] + [None if kv is None else int(kv)])
    return [(x.dtype, shape), (dtypes.int32, shape)]


_register("TopKV2", _top_k_infer)
TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])


def top_k(input, k=1, sorted=True, name=None):  # noqa: A002
    """The ``k`` largest entries of each last-axis row and their indices, largest first
    (equal values: the lower index first). Always sorted, which ``sorted=False`` allows."""
    with _ops.name_scope(name, "TopKV2", [input, k]) as scope:
        x = convert(input, "input")
        k = convert(k, "k", dtype=dtypes.int32)
        op = _ops.make_op("TopKV2", [x, k], {"T": x.dtype, "sorted": bool(sorted)}, name=scope)
        return TopKV2(*op.outputs)


from . import nn_grad  # noqa: E402,F401  (registers the gradients)

# tf.math's share of tf.nn (TF 1.15); log_sigmoid is tf.log_sigmoid and tf.math.log_sigmoid only.
MATH_API = ["in_top_k", "l2_normalize", "log_sigmoid", "log_softmax", "softmax", "softplus",
            "softsign", "top_k"]
