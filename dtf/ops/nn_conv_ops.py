"""tf.nn convolutions and pools beyond conv2d: conv1d, conv3d, depthwise and separable conv2d,
atrous (dilated) convolution, 1-D and 3-D pooling.

Where TF's semantics allow, these are built from registered ops: conv1d and the 1-D pools
are their 2-D ops on an expanded axis, separable_conv2d is a depthwise then a pointwise
conv2d, and dilation inserts zeros between the filter taps (``dilate_filter``), which gives
the same windows, padding and output size as TF's dilated kernels. Conv3D, the 3-D pools
and DepthwiseConv2dNative are ops of their own (numpy kernels in
``kernels/reference/conv_extra.py``). Only channels-last layouts run on CPU.
"""
from __future__ import annotations

import numbers

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.tensor_shape import TensorShape, unknown_shape
from . import array_ops, slicing_ops
from .common import convert, shape_from_tensor
from .nn_ops import (_PADDINGS, _dims, _merge, _register, _shape_error, _spatial_out, avg_pool,
                     conv2d, max_pool)
from .nn_ops import _get_sequence as _sequence

__all__ = ["conv1d", "conv3d", "conv3d_transpose", "convolution", "depthwise_conv2d",
           "depthwise_conv2d_native", "separable_conv2d", "atrous_conv2d", "max_pool3d",
           "avg_pool3d", "max_pool1d", "avg_pool1d", "max_pool2d", "avg_pool2d",
           "conv2d_backprop_input", "conv2d_backprop_filter", "conv3d_backprop_filter_v2",
           "depthwise_conv2d_native_backprop_input", "depthwise_conv2d_native_backprop_filter"]


# -- argument checks shared by the n-d ops ------------------------------------------------------------
def _check_padding(padding):
    if padding not in _PADDINGS:
        raise ValueError(f"Value for attr 'padding' of \"{padding}\" is not in the list of allowed "
                         f"values: \"SAME\", \"VALID\"")
    return padding


def _channels_last(data_format, allowed, default):
    """The one layout the CPU kernels run; another is refused naming the argument."""
    if data_format in (None, default):
        return default
    if data_format in allowed:
        raise ValueError(f"data_format {data_format!r} is not supported: only {default} runs on CPU")
    raise ValueError(f"data_format must be one of {allowed}, got {data_format!r}")


def _check_strides(strides, what="strides"):
    if strides[0] != 1 or strides[-1] != 1:
        raise ValueError(f"Current implementation does not yet support {what} in the batch and "
                         "depth dimensions.")
    return strides


# -- shape inference of the n-d window ops --------------------------------------------------------------
def _window_out(attrs, inputs, spatial, k_sizes):
    """Output spatial sizes (None where unknown); VALID windows must fit (TF's check)."""
    return _spatial_out([None, *spatial], list(k_sizes), attrs, inputs)


def _conv_infer(rank, depthwise=False):
    def infer(inputs, attrs):
        x, w = inputs
        xd, wd = _dims(x, rank, attrs, inputs), _dims(w, rank, attrs, inputs)
        _merge(xd[-1], wd[-2], attrs, inputs)
        out = _window_out(attrs, inputs, xd[1:-1], wd[:-2])
        if depthwise:
            c = None if None in (xd[-1], wd[-1]) else xd[-1] * wd[-1]
        else:
            c = wd[-1]
        return [(x.dtype, TensorShape([xd[0], *out, c]))]

    return infer


def _pool_infer(rank):
    def infer(inputs, attrs):
        x = inputs[0]
        xd = _dims(x, rank, attrs, inputs)
        out = _window_out(attrs, inputs, xd[1:-1], attrs["ksize"][1:-1])
        return [(x.dtype, TensorShape([xd[0], *out, xd[-1]]))]

    return infer


def _sized_infer(sizes_pos, like_pos, rank):
    """Backprop ops: the output shape is given by a sizes input (static when it is known)."""
    def infer(inputs, attrs):
        shape = shape_from_tensor(inputs[sizes_pos], rank_hint=rank)
        _dims(inputs[like_pos], rank, attrs, inputs)
        return [(inputs[like_pos].dtype, shape.merge_with(unknown_shape(rank)))]

    return infer


_register("Conv3D", _conv_infer(5))
_register("Conv3DBackpropInputV2", _sized_infer(0, 1, 5))
_register("Conv3DBackpropFilterV2", _sized_infer(1, 0, 5))
_register("DepthwiseConv2dNative", _conv_infer(4, depthwise=True))
_register("DepthwiseConv2dNativeBackpropInput", _sized_infer(0, 1, 4))
_register("DepthwiseConv2dNativeBackpropFilter", _sized_infer(1, 0, 4))
_register("MaxPool3D", _pool_infer(5))
_register("AvgPool3D", _pool_infer(5))
_register("MaxPool3DGrad", lambda inputs, attrs: [(inputs[2].dtype, inputs[0].shape)])
_register("AvgPool3DGrad", _sized_infer(0, 1, 5))
_register("MaxPool3DGradGrad", lambda inputs, attrs: [(inputs[2].dtype, inputs[1].shape)])
_register("MaxPoolGradGrad", lambda inputs, attrs: [(inputs[2].dtype, inputs[1].shape)])


# -- dilation ------------------------------------------------------------------------------------------
def dilate_filter(filters, rates, name=None):
    """``filters`` [k1, ..., kn, in, out] with rate - 1 zeros between taps along each spatial
    axis: a convolution with it is TF's dilated convolution (same windows and padding).
    Built from ExpandDims, Pad, Reshape and Slice, so gradients reach the original taps."""
    rates = [int(r) for r in rates]
    if any(r < 1 for r in rates):
        raise ValueError(f"dilation rates must be positive, got {rates}")
    if all(r == 1 for r in rates):
        return filters
    dims = filters.shape.as_tuple_or_none()
    if dims is None or None in dims:
        raise ValueError(f"dilation needs a filter of fully known shape, got {filters.shape}")
    with _ops.name_scope(name, "dilate_filter", [filters]):
        dims = list(dims)
        w = filters
        for axis, r in enumerate(rates):
            if r == 1:
                continue
            k = dims[axis]
            w = array_ops.expand_dims(w, axis + 1)
            paddings = [[0, 0]] * len(dims[:axis + 1]) + [[0, r - 1]] + [[0, 0]] * len(dims[axis + 1:])
            w = array_ops.pad(w, paddings)
            w = array_ops.reshape(w, dims[:axis] + [k * r] + dims[axis + 1:])
            size = list(dims)
            size[axis] = (k - 1) * r + 1
            w = slicing_ops.slice(w, [0] * len(dims), size)
            dims = size
        return w


def _dilations(dilations, n, strides):
    d = _sequence(dilations, n, "dilations")
    if d[0] != 1 or d[-1] != 1:
        raise ValueError("Current implementation does not yet support dilations in the batch and "
                         "depth dimensions.")
    if any(r > 1 for r in d) and any(s > 1 for s in strides):
        raise ValueError("strides > 1 not supported in conjunction with dilation_rate > 1")
    return d[1:-1]


def _window_conv(op_type, formats, input, filter, strides, padding, data_format,  # noqa: A002
                 dilations, name):
    """A convolution op over channels-last ``formats[0]``; dilation zero-fills the filter."""
    data_format = _channels_last(data_format, formats, formats[0])
    n = len(formats[0]) - 2
    strides = _check_strides(_sequence(strides, n, "strides"))
    rates = _dilations(dilations, n, strides)
    with _ops.name_scope(name, op_type, [input, filter]) as scope:
        input = convert(input, "input")  # noqa: A001
        filter = dilate_filter(convert(filter, "filter", dtype=input.dtype), rates)  # noqa: A001
        attrs = {"T": input.dtype, "strides": strides, "padding": _check_padding(padding),
                 "data_format": data_format, "dilations": [1] * (n + 2)}
        return _ops.make_tensor(op_type, [input, filter], attrs, name=scope)


# -- conv1d, conv3d ---------------------------------------------------------------------------------------
def conv1d(value=None, filters=None, stride=None, padding=None, use_cudnn_on_gpu=None,
           data_format=None, name=None, input=None, dilations=None):  # noqa: A002
    """1-D convolution of NWC ``value`` with a [width, in, out] filter: conv2d over an added
    height axis of 1, as TF computes it."""
    value = input if value is None else value
    _channels_last(data_format, ("NWC", "NCW"), "NWC")
    if isinstance(stride, numbers.Integral):
        stride = [1, int(stride), 1]
    stride = _check_strides(_sequence(stride, 1, "stride"), "stride")
    dil = _dilations(dilations, 1, stride)
    with _ops.name_scope(name, "conv1d", [value, filters]) as scope:
        value = array_ops.expand_dims(convert(value, "value"), 1)
        filters = array_ops.expand_dims(convert(filters, "filters", dtype=value.dtype), 0)
        result = conv2d(value, filters, [1, 1, stride[1], 1], padding, data_format="NHWC",
                        dilations=[1, 1, dil[0], 1])
        return array_ops.squeeze(result, [1], name=scope)


def conv3d(input, filter=None, strides=None, padding=None, data_format="NDHWC",  # noqa: A002
           dilations=(1, 1, 1, 1, 1), name=None, filters=None):
    """3-D convolution of NDHWC ``input`` with a [d, h, w, in, out] filter."""
    if filter is not None and filters is not None:
        raise ValueError("Cannot specify both 'filters' and 'filter'")
    filter = filters if filter is None else filter  # noqa: A001
    return _window_conv("Conv3D", ("NDHWC", "NCDHW"), input, filter, strides, padding,
                        data_format, dilations, name)


def conv3d_transpose(value, filter=None, output_shape=None, strides=None, padding="SAME",  # noqa: A002
                     data_format="NDHWC", name=None, input=None, filters=None, dilations=None):
    """The gradient of conv3d with respect to its input; filter [d, h, w, out, in]."""
    value = input if value is None else value
    filter = filters if filter is None else filter  # noqa: A001
    data_format = _channels_last(data_format, ("NDHWC", "NCDHW"), "NDHWC")
    if _sequence(dilations, 3, "dilations") != [1] * 5:
        raise ValueError("conv3d_transpose supports only dilations of 1")
    with _ops.name_scope(name, "conv3d_transpose", [value, filter, output_shape]) as scope:
        value = convert(value, "value")
        filter = convert(filter, "filter", dtype=value.dtype)  # noqa: A001
        output_shape = convert(output_shape, "output_shape", hint=dtypes.int32)
        fd, vd = filter.shape.as_tuple_or_none(), value.shape.as_tuple_or_none()
        if fd and vd and None not in (fd[-1], vd[-1]) and fd[-1] != vd[-1]:
            raise ValueError(f"input channels does not match filter's input channels, "
                             f"{vd[-1]} != {fd[-1]}")
        attrs = {"T": value.dtype, "strides": _check_strides(_sequence(strides, 3, "strides")),
                 "padding": _check_padding(padding), "data_format": data_format,
                 "dilations": [1] * 5}
        return _ops.make_tensor("Conv3DBackpropInputV2", [output_shape, filter, value], attrs,
                                name=scope)


_CONV_BY_RANK = {3: conv1d, 4: conv2d, 5: conv3d}


def convolution(input, filter=None, padding=None, strides=None, dilation_rate=None,  # noqa: A002
                name=None, data_format=None, filters=None, dilations=None):
    """conv1d, conv2d or conv3d by the rank of ``input`` (3, 4 or 5), channels last."""
    if filter is not None and filters is not None:
        raise ValueError("Cannot specify both 'filters' and 'filter'")
    if dilation_rate is not None and dilations is not None:
        raise ValueError("Cannot specify both 'dilation_rate' and 'dilations'")
    filter = filters if filter is None else filter  # noqa: A001
    input = convert(input, "input")  # noqa: A001
    rank = input.shape.ndims
    if rank not in _CONV_BY_RANK:
        raise ValueError(f"convolution: input must be of rank 3, 4 or 5 (known), got shape "
                         f"{input.shape}")
    n = rank - 2
    strides = [1, *([1] * n if strides is None else _sequence(strides, n, "strides")[1:-1]), 1]
    rates = dilation_rate if dilations is None else dilations
    rates = [1, *([1] * n if rates is None else _sequence(rates, n, "dilation_rate")[1:-1]), 1]
    with _ops.name_scope(name, "convolution", [input, filter]) as scope:
        return _CONV_BY_RANK[rank](input, filter, strides, padding, data_format=data_format,
                                   dilations=rates, name=scope)


# -- depthwise, separable, atrous --------------------------------------------------------------------------
def depthwise_conv2d_native(input, filter, strides, padding, data_format="NHWC",  # noqa: A002
                            dilations=(1, 1, 1, 1), name=None):
    """Each input channel k convolved with its own filter[:, :, k, j], giving output channel
    k * channel_multiplier + j."""
    return _window_conv("DepthwiseConv2dNative", ("NHWC", "NCHW"), input, filter, strides,
                        padding, data_format, dilations, name)


def _rate(rate, dilations):
    if rate is not None and dilations is not None:
        raise ValueError("Cannot specify both 'rate' and 'dilations'")
    rate = dilations if rate is None else rate
    if rate is None:
        return [1, 1]
    rate = [int(r) for r in ([rate] if isinstance(rate, numbers.Integral) else rate)]
    if len(rate) == 1:
        rate = rate * 2
    if len(rate) != 2:
        raise ValueError(f"rate must be two integers, got {rate}")
    return rate


def depthwise_conv2d(input, filter, strides, padding, rate=None, name=None,  # noqa: A002
                     data_format=None, dilations=None):
    """Depthwise 2-D convolution; ``rate`` dilates the filter (atrous)."""
    rate = _rate(rate, dilations)
    with _ops.name_scope(name, "depthwise", [input, filter]) as scope:
        return depthwise_conv2d_native(input, filter, strides, padding, data_format,
                                       dilations=[1, *rate, 1], name=scope)


def separable_conv2d(input, depthwise_filter, pointwise_filter, strides, padding, rate=None,  # noqa: A002
                     name=None, data_format=None, dilations=None):
    """A depthwise convolution, then a 1x1 convolution mixing its channels."""
    rate = _rate(rate, dilations)
    with _ops.name_scope(name, "separable_conv2d",
                         [input, depthwise_filter, pointwise_filter]) as scope:
        input = convert(input, "input")  # noqa: A001
        depthwise_filter = convert(depthwise_filter, "depthwise_filter", dtype=input.dtype)
        pointwise_filter = convert(pointwise_filter, "pointwise_filter", dtype=input.dtype)
        pd = pointwise_filter.shape.as_tuple_or_none()
        if pd is not None and (len(pd) != 4 or pd[0] not in (1, None) or pd[1] not in (1, None)):
            raise ValueError(f"Shape must be [1, 1, in, out] for pointwise_filter, got {list(pd)}")
        depthwise = depthwise_conv2d_native(input, depthwise_filter, strides, padding,
                                            data_format, dilations=[1, *rate, 1], name="depthwise")
        return conv2d(depthwise, pointwise_filter, [1, 1, 1, 1], padding="VALID",
                      data_format=data_format or "NHWC", name=scope)


def atrous_conv2d(value, filters, rate, padding, name=None):
    """conv2d with the filter dilated by ``rate`` (stride 1)."""
    if int(rate) < 1:
        raise ValueError(f"rate {rate} cannot be less than one")
    with _ops.name_scope(name, "convolution", [value, filters]) as scope:
        return conv2d(value, filters, [1, 1, 1, 1], padding, dilations=[1, rate, rate, 1],
                      name=scope)


# -- the backprop ops, public in TF1 ------------------------------------------------------------------
def _backprop(op_type, formats, first, second, **extra_attrs):
    """A raw conv backprop op: (first, second, out_backprop) -> its gradient, undilated."""
    n = len(formats[0]) - 2

    def operand(value, name, like):
        if name.endswith("sizes"):
            return convert(value, name, hint=dtypes.int32)
        return convert(value, name, dtype=like.dtype)

    def fn(*args, **kwargs):
        given = dict(zip([first, second, "out_backprop", "strides", "padding"], args))
        given.update((k, v) for k, v in kwargs.items() if v is not None)
        if "filters" in given:
            given.setdefault("filter", given.pop("filters"))
        given.pop("use_cudnn_on_gpu", None)
        data_format = _channels_last(given.pop("data_format", None), formats, formats[0])
        if _sequence(given.pop("dilations", None), n, "dilations") != [1] * (n + 2):
            raise ValueError(f"{op_type}: only dilations of 1 are supported")
        with _ops.name_scope(given.pop("name", None), op_type) as scope:
            dy = convert(given["out_backprop"], "out_backprop")
            attrs = {"T": dy.dtype, "padding": _check_padding(given["padding"]),
                     "strides": _check_strides(_sequence(given["strides"], n, "strides")),
                     "data_format": data_format, "dilations": [1] * (n + 2), **extra_attrs}
            inputs = [operand(given[first], first, dy), operand(given[second], second, dy), dy]
            return _ops.make_tensor(op_type, inputs, attrs, name=scope)

    fn.__name__ = op_type
    fn.__doc__ = f"The {op_type} op: ({first}, {second}, out_backprop), strides, padding."
    return fn


_CONV2D_ATTRS = {"use_cudnn_on_gpu": True, "explicit_paddings": []}
conv2d_backprop_input = _backprop("Conv2DBackpropInput", ("NHWC", "NCHW"), "input_sizes", "filter",
                                  **_CONV2D_ATTRS)
conv2d_backprop_filter = _backprop("Conv2DBackpropFilter", ("NHWC", "NCHW"), "input",
                                   "filter_sizes", **_CONV2D_ATTRS)
conv3d_backprop_filter_v2 = _backprop("Conv3DBackpropFilterV2", ("NDHWC", "NCDHW"), "input",
                                      "filter_sizes")
depthwise_conv2d_native_backprop_input = _backprop("DepthwiseConv2dNativeBackpropInput",
                                                   ("NHWC", "NCHW"), "input_sizes", "filter")
depthwise_conv2d_native_backprop_filter = _backprop("DepthwiseConv2dNativeBackpropFilter",
                                                    ("NHWC", "NCHW"), "input", "filter_sizes")


# -- pooling ----------------------------------------------------------------------------------------------
def _make_pool3d(op_type):
    def fn(input, ksize, strides, padding, data_format="NDHWC", name=None):  # noqa: A002
        fmt = _channels_last(data_format, ("NDHWC", "NCDHW"), "NDHWC")
        ksize = _sequence(ksize, 3, "ksize")
        if ksize[0] != 1 or ksize[-1] != 1:
            raise ValueError("Pooling is not yet supported on the batch or depth dimensions.")
        with _ops.name_scope(name, op_type, [input]) as scope:
            x = convert(input, "input")
            attrs = {"T": x.dtype, "ksize": ksize, "padding": _check_padding(padding),
                     "strides": _check_strides(_sequence(strides, 3, "strides")),
                     "data_format": fmt}
            return _ops.make_tensor(op_type, [x], attrs, name=scope)

    fn.__name__ = op_type
    fn.__doc__ = f"{op_type} over the D, H and W axes of NDHWC ``input``."
    return fn


max_pool3d = _make_pool3d("MaxPool3D")
avg_pool3d = _make_pool3d("AvgPool3D")


def _make_pool1d(pool2d, default_name):
    def fn(input, ksize, strides, padding, data_format="NWC", name=None):  # noqa: A002
        _channels_last(data_format, ("NWC", "NCW"), "NWC")
        ksize = _sequence(ksize, 1, "ksize")
        strides = _sequence(strides, 1, "strides")
        with _ops.name_scope(name, default_name, [input]) as scope:
            x = array_ops.expand_dims(convert(input, "input"), 1)
            y = pool2d(x, [1, 1, ksize[1], 1], [1, 1, strides[1], 1], padding)
            return array_ops.squeeze(y, [1], name=scope)

    fn.__name__ = default_name
    fn.__doc__ = f"{default_name} of NWC ``input``: the 2-D pool over an added height axis of 1."
    return fn


max_pool1d = _make_pool1d(max_pool, "MaxPool1d")
avg_pool1d = _make_pool1d(avg_pool, "AvgPool1D")


def max_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """tf.nn.max_pool2d: max_pool with ``input`` as its first argument."""
    return max_pool(input, ksize, strides, padding, data_format, name)


def avg_pool2d(input, ksize, strides, padding, data_format="NHWC", name=None):  # noqa: A002
    """tf.nn.avg_pool2d: avg_pool with ``input`` as its first argument."""
    return avg_pool(input, ksize, strides, padding, data_format, name)


from . import nn_conv_grad  # noqa: E402,F401  (registers the gradients)
