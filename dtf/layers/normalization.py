"""tf.layers.BatchNormalization and tf.layers.batch_normalization (TF1 behaviour).

Variables ``gamma`` and ``beta`` (trainable) and ``moving_mean`` and ``moving_variance``
(global, not trainable), made in that order. In training the batch's statistics normalize
and the moving ones are updated by ``AssignMovingAvg`` ops the layer adds to
``GraphKeys.UPDATE_OPS`` (run them with the train op, as TF programs do); otherwise the
moving statistics normalize. ``fused`` (the default for 4-D and 5-D inputs normalized over
their first or last axis) updates the moving variance with the Bessel-corrected batch
variance, the non-fused path with the biased one: both as TF does.
"""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.tensor_shape import TensorShape
from dtf.ops import array_ops, init_ops, math_ops, nn_norm_ops, nn_ops, state_ops
from dtf.ops.smart_cond import smart_cond
from .base import InputSpec, Layer, constant_value

__all__ = ["BatchNormalization", "batch_normalization"]

_FUSED_FORMATS = {(4, 1): "NCHW", (4, 3): "NHWC", (5, 1): "NCDHW", (5, 4): "NDHWC"}


class BatchNormalization(Layer):
    """Normalizes its input over every axis but ``axis`` (the channels), then scales by
    ``gamma`` and shifts by ``beta``; ``training`` (bool or bool Tensor) picks batch or
    moving statistics."""

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer=init_ops.zeros_initializer(),
                 gamma_initializer=init_ops.ones_initializer(),
                 moving_mean_initializer=init_ops.zeros_initializer(),
                 moving_variance_initializer=init_ops.ones_initializer(),
                 beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                 gamma_constraint=None, renorm=False, renorm_clipping=None,
                 renorm_momentum=0.99, fused=None, trainable=True, virtual_batch_size=None,
                 adjustment=None, name=None, **kwargs):
        super().__init__(trainable=trainable, name=name, **kwargs)
        for arg, value, default in (("renorm", renorm, False), ("renorm_clipping", renorm_clipping, None),
                                    ("virtual_batch_size", virtual_batch_size, None),
                                    ("adjustment", adjustment, None)):
            if value != default:
                raise NotImplementedError(f"BatchNormalization: {arg} is not supported")
        if isinstance(axis, (list, tuple)):
            if len(axis) != 1:
                raise NotImplementedError(f"BatchNormalization: axis over several dimensions "
                                          f"({list(axis)}) is not supported")
            axis = axis[0]
        if not isinstance(axis, int):
            raise TypeError(f"Expected an int or a list/tuple of ints for the argument 'axis', "
                            f"but received: {axis}")
        self.axis, self.momentum, self.epsilon = axis, momentum, epsilon
        self.center, self.scale = center, scale
        self.beta_initializer, self.gamma_initializer = beta_initializer, gamma_initializer
        self.moving_mean_initializer = moving_mean_initializer
        self.moving_variance_initializer = moving_variance_initializer
        self.beta_regularizer, self.gamma_regularizer = beta_regularizer, gamma_regularizer
        self.beta_constraint, self.gamma_constraint = beta_constraint, gamma_constraint
        self.fused = True if fused is None else fused  # TF1: settled in build by the rank

    @property
    def _param_dtype(self):
        return dtypes.float32 if self._dtype == dtypes.float16 else (self._dtype or dtypes.float32)

    def build(self, input_shape):
        dims = TensorShape(input_shape).as_tuple_or_none()
        if dims is None:
            raise ValueError(f"Input has undefined rank: {input_shape}")
        rank = len(dims)
        axis = self.axis + rank if self.axis < 0 else self.axis
        if not 0 <= axis < rank:
            raise ValueError(f"Invalid axis: {self.axis}")
        self.axis = axis
        self.input_spec = InputSpec(ndim=rank, axes={axis: dims[axis]})
        if dims[axis] is None:
            raise ValueError(f"Input has undefined `axis` dimension. Received input with shape "
                             f"{TensorShape(input_shape)}. Axis value: {[axis]}")
        self._data_format = _FUSED_FORMATS.get((rank, axis)) if self.fused else None
        self.fused = self._data_format is not None
        shape = [dims[axis]]
        dtype = self._param_dtype
        self.gamma = self.add_weight("gamma", shape, dtype, self.gamma_initializer,
                                     self.gamma_regularizer, constraint=self.gamma_constraint) \
            if self.scale else None
        self.beta = self.add_weight("beta", shape, dtype, self.beta_initializer,
                                    self.beta_regularizer, constraint=self.beta_constraint) \
            if self.center else None
        self.moving_mean = self.add_weight("moving_mean", shape, dtype,
                                           self.moving_mean_initializer, trainable=False)
        self.moving_variance = self.add_weight("moving_variance", shape, dtype,
                                               self.moving_variance_initializer, trainable=False)
        self.built = True

    def _assign_moving_average(self, variable, value, momentum):
        with _ops.name_scope("AssignMovingAvg") as scope:
            with _ops.colocate_with(variable):
                decay = _ops.convert_to_tensor(1.0 - momentum, name="decay")
                if decay.dtype != variable.dtype.base_dtype:
                    decay = math_ops.cast(decay, variable.dtype.base_dtype)
                update_delta = (variable - math_ops.cast(value, variable.dtype.base_dtype)) * decay
                return state_ops.assign_sub(variable, update_delta, name=scope)

    def _add_fused_moving_updates(self, mean, variance, training):
        """Moving averages towards the fused op's statistics; a dynamic ``training`` picks
        momentum 1 (no change) when False, as TF's fused path does."""
        if constant_value(training) is None:
            momentum = smart_cond(training, lambda: _ops.convert_to_tensor(self.momentum),
                                  lambda: _ops.convert_to_tensor(1.0))
        else:
            momentum = _ops.convert_to_tensor(self.momentum)
        self.add_update(lambda: self._assign_moving_average(self.moving_mean, mean, momentum))
        self.add_update(lambda: self._assign_moving_average(self.moving_variance, variance,
                                                            momentum))

    def _add_moving_updates(self, mean, variance, training):
        """Each update is a cond on ``training``: its false branch only reads the variable,
        so no assignment runs when a dynamic ``training`` is False (TF's non-fused path)."""
        def update(variable, value):
            return lambda: smart_cond(
                training, lambda: self._assign_moving_average(variable, value, self.momentum),
                lambda: _ops.convert_to_tensor(variable))

        self.add_update(update(self.moving_mean, mean))
        self.add_update(update(self.moving_variance, variance))

    def _constant_params(self):
        shape = self.moving_mean.shape.as_list()
        gamma = self.gamma if self.scale else array_ops.ones(shape, self._param_dtype)
        beta = self.beta if self.center else array_ops.zeros(shape, self._param_dtype)
        return gamma, beta

    def _fused_call(self, inputs, training):
        gamma, beta = self._constant_params()

        def train():
            return nn_norm_ops.fused_batch_norm(inputs, gamma, beta, epsilon=self.epsilon,
                                                data_format=self._data_format)

        def infer():
            return nn_norm_ops.fused_batch_norm(inputs, gamma, beta, mean=self.moving_mean,
                                                variance=self.moving_variance,
                                                epsilon=self.epsilon, is_training=False,
                                                data_format=self._data_format)

        # Only the branch taken runs: no batch statistics are computed at inference.
        output, mean, variance = smart_cond(training, train, infer)
        value = constant_value(training)
        if value or value is None:
            self._add_fused_moving_updates(mean, variance, training)
        return output

    def _call(self, inputs, training):
        inputs_dtype = inputs.dtype.base_dtype
        if inputs_dtype == dtypes.float16:
            inputs = math_ops.cast(inputs, dtypes.float32)
        ndims = inputs.shape.ndims
        reduction_axes = [i for i in range(ndims) if i != self.axis]
        broadcast_shape = [1] * ndims
        broadcast_shape[self.axis] = inputs.shape.as_list()[self.axis]

        def broadcast(v):
            # Only a channel axis other than the last needs the [C] vectors reshaped.
            if v is not None and v.shape.ndims != ndims and reduction_axes != list(range(ndims - 1)):
                return array_ops.reshape(v, broadcast_shape)
            return v

        scale, offset = broadcast(self.gamma), broadcast(self.beta)
        value = constant_value(training)
        if value is False:
            mean, variance = self.moving_mean, self.moving_variance
        else:
            batch_mean, batch_variance = nn_ops.moments(
                math_ops.cast(inputs, self._param_dtype), reduction_axes)
            # As in TF, the moments are computed outside the conds (they run for a dynamic
            # ``training`` either way); the conds pick them or the moving statistics.
            mean = smart_cond(training, lambda: batch_mean,
                              lambda: _ops.convert_to_tensor(self.moving_mean))
            variance = smart_cond(training, lambda: batch_variance,
                                  lambda: _ops.convert_to_tensor(self.moving_variance))
            self._add_moving_updates(mean, variance, training)
        mean = math_ops.cast(mean, inputs.dtype)
        variance = math_ops.cast(variance, inputs.dtype)
        if offset is not None:
            offset = math_ops.cast(offset, inputs.dtype)
        if scale is not None:
            scale = math_ops.cast(scale, inputs.dtype)
        outputs = nn_norm_ops.batch_normalization(inputs, broadcast(mean), broadcast(variance),
                                                  offset, scale, self.epsilon)
        if inputs_dtype == dtypes.float16:
            outputs = math_ops.cast(outputs, inputs_dtype)
        outputs.set_shape(inputs.shape)
        return outputs

    def call(self, inputs, training=False):
        if self.fused:
            return self._fused_call(inputs, training)
        return self._call(inputs, training)


def batch_normalization(inputs, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                        beta_initializer=init_ops.zeros_initializer(),
                        gamma_initializer=init_ops.ones_initializer(),
                        moving_mean_initializer=init_ops.zeros_initializer(),
                        moving_variance_initializer=init_ops.ones_initializer(),
                        beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                        gamma_constraint=None, training=False, trainable=True, name=None,
                        reuse=None, renorm=False, renorm_clipping=None, renorm_momentum=0.99,
                        fused=None, virtual_batch_size=None, adjustment=None):
    """Functional interface of the batch normalization layer. Run the ops in
    ``tf.GraphKeys.UPDATE_OPS`` with the train op to update the moving statistics."""
    layer = BatchNormalization(
        axis=axis, momentum=momentum, epsilon=epsilon, center=center, scale=scale,
        beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
        moving_mean_initializer=moving_mean_initializer,
        moving_variance_initializer=moving_variance_initializer,
        beta_regularizer=beta_regularizer, gamma_regularizer=gamma_regularizer,
        beta_constraint=beta_constraint, gamma_constraint=gamma_constraint, renorm=renorm,
        renorm_clipping=renorm_clipping, renorm_momentum=renorm_momentum, fused=fused,
        trainable=trainable, virtual_batch_size=virtual_batch_size, adjustment=adjustment,
        name=name, _reuse=reuse, _scope=name)
    return layer.apply(inputs, training=training)
