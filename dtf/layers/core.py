"""tf.layers.Dense, Dropout and Flatten, and their functional forms."""
from __future__ import annotations

import numbers

from dtf.framework.tensor_shape import TensorShape
from dtf.ops import array_ops, init_ops, linalg_ops, nn_ops
from dtf.ops.smart_cond import smart_cond
from .base import InputSpec, Layer, add_bias, add_kernel, get_activation, normalize_data_format

__all__ = ["Dense", "Dropout", "Flatten", "dense", "dropout", "flatten"]


class Dense(Layer):
    """outputs = activation(inputs @ kernel + bias); inputs of rank > 2 are multiplied
    along their last axis."""

    def __init__(self, units, activation=None, use_bias=True, kernel_initializer=None,
                 bias_initializer=init_ops.zeros_initializer(), kernel_regularizer=None,
                 bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
                 bias_constraint=None, trainable=True, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name,
                         activity_regularizer=activity_regularizer, **kwargs)
        self.units = int(units)
        self.activation = get_activation(activation)
        self.use_bias = use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint
        self.input_spec = InputSpec(min_ndim=2)

    def build(self, input_shape):
        last = TensorShape(input_shape).as_tuple_or_none()[-1]
        if last is None:
            raise ValueError("The last dimension of the inputs to `Dense` should be defined. "
                             "Found `None`.")
        self.input_spec = InputSpec(min_ndim=2, axes={-1: last})
        self.kernel = add_kernel(self, [last, self.units])
        self.bias = add_bias(self, self.units)
        self.built = True

    def call(self, inputs):
        rank = inputs.shape.ndims
        if rank is not None and rank <= 2:
            outputs = linalg_ops.matmul(inputs, self.kernel)
        else:
            # tensordot over the last axis: rows of the flattened leading axes.
            last = self.kernel.shape.as_list()[0]
            flat = linalg_ops.matmul(array_ops.reshape(inputs, [-1, last]), self.kernel)
            leading = array_ops.shape(inputs)[:-1]
            outputs = array_ops.reshape(flat, array_ops.concat([leading, [self.units]], 0))
            if rank is not None:
                outputs.set_shape(inputs.shape.as_list()[:-1] + [self.units])
        if self.use_bias:
            outputs = nn_ops.bias_add(outputs, self.bias)
        if self.activation is not None:
            return self.activation(outputs)
        return outputs


def dense(inputs, units, activation=None, use_bias=True, kernel_initializer=None,
          bias_initializer=init_ops.zeros_initializer(), kernel_regularizer=None,
          bias_regularizer=None, activity_regularizer=None, kernel_constraint=None,
          bias_constraint=None, trainable=True, name=None, reuse=None):
    """Functional interface of the densely-connected layer."""
    layer = Dense(units, activation=activation, use_bias=use_bias,
                  kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                  kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                  activity_regularizer=activity_regularizer, kernel_constraint=kernel_constraint,
                  bias_constraint=bias_constraint, trainable=trainable, name=name,
                  _scope=name, _reuse=reuse)
    return layer.apply(inputs)


class Dropout(Layer):
    """Zeroes each input with probability ``rate`` when ``training``, scaling the rest by
    1 / (1 - rate); the identity otherwise. ``training`` may be a bool or a bool Tensor."""

    def __init__(self, rate=0.5, noise_shape=None, seed=None, name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        self.rate, self.noise_shape, self.seed = rate, noise_shape, seed

    def _get_noise_shape(self, inputs):
        if self.noise_shape is None:
            return None
        shape = array_ops.shape(inputs)
        return [shape[i] if d is None else d for i, d in enumerate(self.noise_shape)]

    def call(self, inputs, training=False):
        if isinstance(self.rate, numbers.Real) and self.rate == 0:
            return array_ops.identity(inputs)
        return smart_cond(
            training,
            lambda: nn_ops.dropout(inputs, noise_shape=self._get_noise_shape(inputs),
                                   seed=self.seed, rate=self.rate),
            lambda: array_ops.identity(inputs))


def dropout(inputs, rate=0.5, noise_shape=None, seed=None, training=False, name=None):
    """Functional interface of the dropout layer (``training`` defaults to False)."""
    layer = Dropout(rate, noise_shape=noise_shape, seed=seed, name=name)
    return layer.apply(inputs, training=training)


class Flatten(Layer):
    """[batch, ...] -> [batch, prod(...)]."""

    def __init__(self, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.data_format = normalize_data_format(data_format)

    def call(self, inputs):
        dims = inputs.shape.as_tuple_or_none()
        if self.data_format == "channels_first" and dims is not None and len(dims) > 1:
            inputs = array_ops.transpose(inputs, [0, *range(2, len(dims)), 1])
        if dims is not None and len(dims) == 1:
            return array_ops.expand_dims(inputs, 1)
        outputs = array_ops.reshape(inputs, array_ops.stack([array_ops.shape(inputs)[0], -1]))
        if dims is not None:
            rest = dims[1:]
            size = None if None in rest else int(_prod(rest))
            outputs.set_shape([dims[0], size])
        return outputs


def _prod(values):
    out = 1
    for v in values:
        out *= v
    return out


def flatten(inputs, name=None, data_format="channels_last"):
    """Flattens every axis but the first."""
    return Flatten(name=name, data_format=data_format).apply(inputs)

