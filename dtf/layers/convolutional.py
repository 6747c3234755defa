"""tf.layers convolutions: Conv1D/2D/3D, Conv2DTranspose/Conv3DTranspose,
SeparableConv1D/2D and their functional forms. Variables: ``kernel`` and ``bias``
(separable: ``depthwise_kernel``, ``pointwise_kernel``, ``bias``), shaped as TF shapes them."""
from __future__ import annotations

from dtf.framework.tensor_shape import TensorShape
from dtf.ops import array_ops, init_ops, nn_conv_ops, nn_ops
from .base import (InputSpec, Layer, add_bias, add_kernel, get_activation, normalize_data_format,
                   normalize_padding, normalize_tuple, require_channels_last)

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv2DTranspose", "Conv3DTranspose",
           "SeparableConv1D", "SeparableConv2D", "conv1d", "conv2d", "conv3d",
           "conv2d_transpose", "conv3d_transpose", "separable_conv1d", "separable_conv2d"]

_ZEROS = init_ops.zeros_initializer()


class _Conv(Layer):
    """N-d convolution layer (channels_last) with an optional bias and activation."""

    rank = 2

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1, activation=None, use_bias=True,
                 kernel_initializer=None, bias_initializer=_ZEROS, kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable=True, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name,
                         activity_regularizer=activity_regularizer, **kwargs)
        n = self.rank
        self.filters = int(filters)
        self.kernel_size = normalize_tuple(kernel_size, n, "kernel_size")
        self.strides = normalize_tuple(strides, n, "strides")
        self.padding = normalize_padding(padding, allow_causal=n == 1)
        self.data_format = normalize_data_format(data_format)
        require_channels_last(self.data_format, type(self).__name__)
        self.dilation_rate = normalize_tuple(dilation_rate, n, "dilation_rate")
        self.activation = get_activation(activation)
        self.use_bias = use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint
        self.input_spec = InputSpec(ndim=n + 2)

    def _input_channels(self, input_shape):
        channels = TensorShape(input_shape).as_tuple_or_none()[-1]
        if channels is None:
            raise ValueError("The channel dimension of the inputs should be defined. Found `None`.")
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={-1: channels})
        return channels

    def _kernel_shape(self, channels):
        return list(self.kernel_size) + [channels, self.filters]

    def build(self, input_shape):
        channels = self._input_channels(input_shape)
        self.kernel = add_kernel(self, self._kernel_shape(channels))
        self.bias = add_bias(self, self.filters)
        self.built = True

    def _convolve(self, inputs):
        padding = self.padding.upper()
        dilations = [1, *self.dilation_rate, 1]
        strides = [1, *self.strides, 1]
        if self.rank == 1:
            if self.padding == "causal":  # left-pad so output t sees inputs <= t only
                left = self.dilation_rate[0] * (self.kernel_size[0] - 1)
                inputs = array_ops.pad(inputs, [[0, 0], [left, 0], [0, 0]])
                padding = "VALID"
            return nn_conv_ops.conv1d(inputs, self.kernel, strides, padding, dilations=dilations)
        if self.rank == 2:
            return nn_ops.conv2d(inputs, self.kernel, strides, padding, dilations=dilations)
        return nn_conv_ops.conv3d(inputs, self.kernel, strides, padding, dilations=dilations)

    def call(self, inputs):
        outputs = self._convolve(inputs)
        if self.use_bias:
            outputs = nn_ops.bias_add(outputs, self.bias, data_format="NHWC")
        if self.activation is not None:
            return self.activation(outputs)
        return outputs


class Conv1D(_Conv):
    """1-D convolution layer over [batch, width, channels]; padding may be "causal"."""
    rank = 1


class Conv2D(_Conv):
    """2-D convolution layer over [batch, height, width, channels]."""
    rank = 2


class Conv3D(_Conv):
    """3-D convolution layer over [batch, depth, height, width, channels]."""
    rank = 3


def deconv_output_length(input_length, filter_size, padding, stride):
    """Output length of a transposed convolution (TF's conv_utils); works on ints and
    scalar tensors alike."""
    if padding == "valid":
        return input_length * stride + max(filter_size - stride, 0)
    return input_length * stride


class Conv2DTranspose(_Conv):
    """Transposed 2-D convolution (the gradient of conv2d), kernel [h, w, filters, in]."""

    rank = 2

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", activation=None, use_bias=True,
                 kernel_initializer=None, bias_initializer=_ZEROS, kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable=True, name=None, **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         trainable=trainable, name=name, **kwargs)

    def _kernel_shape(self, channels):
        return list(self.kernel_size) + [self.filters, channels]

    def _convolve(self, inputs):
        dims = inputs.shape.as_tuple_or_none()
        shape = array_ops.shape(inputs)
        out = []
        for i in range(self.rank):
            size = dims[1 + i] if dims[1 + i] is not None else shape[1 + i]
            out.append(deconv_output_length(size, self.kernel_size[i], self.padding,
                                            self.strides[i]))
        output_shape = array_ops.stack([shape[0], *out, self.filters])
        transpose = nn_ops.conv2d_transpose if self.rank == 2 else nn_conv_ops.conv3d_transpose
        outputs = transpose(inputs, self.kernel, output_shape, [1, *self.strides, 1],
                            padding=self.padding.upper())
        outputs.set_shape([dims[0], *[o if isinstance(o, int) else None for o in out],
                           self.filters])
        return outputs


class Conv3DTranspose(Conv2DTranspose):
    """Transposed 3-D convolution (the gradient of conv3d), kernel [d, h, w, filters, in]."""

    rank = 3

    def __init__(self, filters, kernel_size, strides=(1, 1, 1), padding="valid",
                 data_format="channels_last", **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, **kwargs)


class SeparableConv2D(_Conv):
    """A depthwise 2-D convolution (``depth_multiplier`` filters per input channel), then a
    1x1 convolution to ``filters`` channels."""

    rank = 2

    def __init__(self, filters, kernel_size, strides=(1, 1), padding="valid",
                 data_format="channels_last", dilation_rate=(1, 1), depth_multiplier=1,
                 activation=None, use_bias=True, depthwise_initializer=None,
                 pointwise_initializer=None, bias_initializer=_ZEROS, depthwise_regularizer=None,
                 pointwise_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 depthwise_constraint=None, pointwise_constraint=None, bias_constraint=None,
                 trainable=True, name=None, **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate,
                         activation=activation, use_bias=use_bias,
                         bias_initializer=bias_initializer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         bias_constraint=bias_constraint, trainable=trainable, name=name,
                         **kwargs)
        self.depth_multiplier = int(depth_multiplier)
        self.depthwise_initializer, self.pointwise_initializer = (depthwise_initializer,
                                                                  pointwise_initializer)
        self.depthwise_regularizer, self.pointwise_regularizer = (depthwise_regularizer,
                                                                  pointwise_regularizer)
        self.depthwise_constraint, self.pointwise_constraint = (depthwise_constraint,
                                                                pointwise_constraint)

    def build(self, input_shape):
        channels = self._input_channels(input_shape)
        self.depthwise_kernel = add_kernel(
            self, list(self.kernel_size) + [channels, self.depth_multiplier], "depthwise_kernel",
            "depthwise")
        self.pointwise_kernel = add_kernel(
            self, [1] * self.rank + [channels * self.depth_multiplier, self.filters],
            "pointwise_kernel",
            "pointwise")
        self.bias = add_bias(self, self.filters)
        self.built = True

    def _convolve(self, inputs):
        return nn_conv_ops.separable_conv2d(inputs, self.depthwise_kernel, self.pointwise_kernel,
                                            [1, *self.strides, 1], self.padding.upper(),
                                            rate=self.dilation_rate)


class SeparableConv1D(SeparableConv2D):
    """SeparableConv2D over [batch, width, channels], computed on an added height axis of 1
    (as TF computes it); padding may be "causal"."""

    rank = 1

    def __init__(self, filters, kernel_size, strides=1, padding="valid",
                 data_format="channels_last", dilation_rate=1, depth_multiplier=1, **kwargs):
        super().__init__(filters, kernel_size, strides=strides, padding=padding,
                         data_format=data_format, dilation_rate=dilation_rate,
                         depth_multiplier=depth_multiplier, **kwargs)

    def _convolve(self, inputs):
        padding = self.padding.upper()
        if self.padding == "causal":
            left = self.dilation_rate[0] * (self.kernel_size[0] - 1)
            inputs = array_ops.pad(inputs, [[0, 0], [left, 0], [0, 0]])
            padding = "VALID"
        outputs = nn_conv_ops.separable_conv2d(
            array_ops.expand_dims(inputs, 1), array_ops.expand_dims(self.depthwise_kernel, 0),
            array_ops.expand_dims(self.pointwise_kernel, 0), [1, 1, self.strides[0], 1], padding,
            rate=[1, self.dilation_rate[0]])
        return array_ops.squeeze(outputs, [1])


def _functional(cls, doc):
    def fn(inputs, filters, kernel_size, *args, name=None, reuse=None, **kwargs):
        layer = cls(filters, kernel_size, *args, name=name, _scope=name, _reuse=reuse, **kwargs)
        return layer.apply(inputs)

    fn.__doc__ = doc
    return fn


conv1d = _functional(Conv1D, "Functional interface of the 1-D convolution layer.")
conv2d = _functional(Conv2D, "Functional interface of the 2-D convolution layer.")
conv3d = _functional(Conv3D, "Functional interface of the 3-D convolution layer.")
conv2d_transpose = _functional(Conv2DTranspose,
                               "Functional interface of the transposed 2-D convolution layer.")
separable_conv2d = _functional(SeparableConv2D,
                               "Functional interface of the depthwise separable 2-D convolution "
                               "layer.")
conv3d_transpose = _functional(Conv3DTranspose,
                               "Functional interface of the transposed 3-D convolution layer.")
separable_conv1d = _functional(SeparableConv1D,
                               "Functional interface of the depthwise separable 1-D convolution "
                               "layer.")
for _fn, _name in ((conv1d, "conv1d"), (conv2d, "conv2d"), (conv3d, "conv3d"),
                   (conv2d_transpose, "conv2d_transpose"), (separable_conv2d, "separable_conv2d"),
                   (conv3d_transpose, "conv3d_transpose"), (separable_conv1d, "separable_conv1d")):
    _fn.__name__ = _name
