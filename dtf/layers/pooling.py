"""tf.layers pooling: MaxPooling1D/2D/3D, AveragePooling1D/2D/3D and their functional
forms (channels_last)."""
from __future__ import annotations

from dtf.ops import nn_conv_ops, nn_ops
from .base import (InputSpec, Layer, normalize_data_format, normalize_padding, normalize_tuple,
                   require_channels_last)

__all__ = ["MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "AveragePooling1D",
           "AveragePooling2D", "AveragePooling3D", "max_pooling1d", "max_pooling2d",
           "max_pooling3d", "average_pooling1d", "average_pooling2d", "average_pooling3d"]

# (rank, is max) -> the tf.nn pool taking channels-last ksize and strides lists
_POOLS = {(1, True): nn_conv_ops.max_pool1d, (1, False): nn_conv_ops.avg_pool1d,
          (2, True): nn_ops.max_pool, (2, False): nn_ops.avg_pool,
          (3, True): nn_conv_ops.max_pool3d, (3, False): nn_conv_ops.avg_pool3d}


class _Pooling(Layer):
    rank = 2
    is_max = True

    def __init__(self, pool_size, strides, padding="valid", data_format="channels_last",
                 name=None, **kwargs):
        super().__init__(name=name, **kwargs)
        n = self.rank
        self.pool_size = normalize_tuple(pool_size, n, "pool_size")
        self.strides = normalize_tuple(self.pool_size if strides is None else strides, n,
                                       "strides")
        self.padding = normalize_padding(padding)
        self.data_format = normalize_data_format(data_format)
        require_channels_last(self.data_format, type(self).__name__)
        self.input_spec = InputSpec(ndim=n + 2)

    def call(self, inputs):
        pool = _POOLS[(self.rank, self.is_max)]
        return pool(inputs, [1, *self.pool_size, 1], [1, *self.strides, 1], self.padding.upper())


def _pooling_class(name, rank, is_max):
    kind = "Max" if is_max else "Average"
    return type(name, (_Pooling,), {"rank": rank, "is_max": is_max,
                                    "__doc__": f"{kind} pooling layer over {rank}-D inputs.",
                                    "__module__": __name__})


MaxPooling1D = _pooling_class("MaxPooling1D", 1, True)
MaxPooling2D = _pooling_class("MaxPooling2D", 2, True)
MaxPooling3D = _pooling_class("MaxPooling3D", 3, True)
AveragePooling1D = _pooling_class("AveragePooling1D", 1, False)
AveragePooling2D = _pooling_class("AveragePooling2D", 2, False)
AveragePooling3D = _pooling_class("AveragePooling3D", 3, False)


def _functional(cls, fn_name):
    def fn(inputs, pool_size, strides, padding="valid", data_format="channels_last", name=None):
        return cls(pool_size, strides, padding=padding, data_format=data_format,
                   name=name).apply(inputs)

    fn.__name__ = fn_name
    fn.__doc__ = f"Functional interface of the {cls.__name__} layer."
    return fn


max_pooling1d = _functional(MaxPooling1D, "max_pooling1d")
max_pooling2d = _functional(MaxPooling2D, "max_pooling2d")
max_pooling3d = _functional(MaxPooling3D, "max_pooling3d")
average_pooling1d = _functional(AveragePooling1D, "average_pooling1d")
average_pooling2d = _functional(AveragePooling2D, "average_pooling2d")
average_pooling3d = _functional(AveragePooling3D, "average_pooling3d")
