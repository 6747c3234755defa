"""tf.train.ExponentialMovingAverage: shadow variables that track others' moving averages.

A shadow is a non-trainable global variable named ``<variable>/<ema name>`` (TF's slot
naming, so checkpoints and ``variables_to_restore`` line up with TF's), colocated with
its variable and updated by ``shadow -= (1 - decay) * (shadow - value)``.
"""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.ops import GraphKeys
from dtf.ops import control_flow_ops, init_ops, state_ops
from dtf.ops import math_ops as _m
from dtf.ops import variable_scope as _vs
from dtf.ops import variables as _variables

__all__ = ["ExponentialMovingAverage"]

_FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)


def _is_variable(x):
    return isinstance(x, _variables.Variable)


def _create_shadow(primary, name):
    """``<primary>/<name>``: starts at the variable's initial value, or at zeros for a
    tensor (whose value is not known before the first update)."""
    graph = primary.graph
    with graph.as_default(), _ops.name_scope(None), graph.control_dependencies(None):
        with _vs.variable_scope(None, primary.op.name + "/" + name):
            if _is_variable(primary):
                with graph.colocate_with(primary.op):
                    return _vs.get_variable("", initializer=primary.initialized_value(),
                                            trainable=False)
            shape = primary.get_shape()
            if shape.is_fully_defined():
                return _vs.get_variable("", shape=shape, dtype=primary.dtype.base_dtype,
                                        initializer=init_ops.zeros_initializer(), trainable=False)
            from dtf.ops.array_ops import zeros_like

            return _vs.get_variable("", initializer=zeros_like(primary), trainable=False,
                                    validate_shape=False)


def _assign_moving_average(shadow, value, decay):
    """shadow -= (shadow - value) * (1 - decay), one AssignSub on the shadow."""
    with _ops.name_scope(None, "AssignMovingAvg", [shadow, value, decay]) as scope:
        if _is_variable(value):
            # A read made here, under the caller's control dependencies: the canonical
            # `with control_dependencies([train_op]): ema.apply()` must average the updated
            # value. (TF's reference variables alias their buffer, so any read sees it;
            # dtf's reads are snapshots taken when they run.)
            value = value.read_value()
        one_minus = _ops.convert_to_tensor(1.0 - decay, name="decay")
        if one_minus.dtype != shadow.dtype.base_dtype:
            one_minus = _m.cast(one_minus, shadow.dtype.base_dtype)
        return state_ops.assign_sub(shadow, (shadow - value) * one_minus, name=scope)


class ExponentialMovingAverage:
    """Maintains moving averages of variables (or tensors) with exponential decay; with
    ``num_updates`` the decay is min(decay, (1 + num_updates) / (10 + num_updates))."""

    def __init__(self, decay, num_updates=None, zero_debias=False,
                 name="ExponentialMovingAverage"):
        if zero_debias:
            raise NotImplementedError("ExponentialMovingAverage(zero_debias=True) is not "
                                      "supported by dtf; it only changes averages of tensors "
                                      "that are not variables")
        self._decay = decay
        self._num_updates = num_updates
        self._name = name
        self._averages: dict = {}

    @property
    def name(self):
        return self._name

    def apply(self, var_list=None):
        """Creates the shadows of ``var_list`` (default: the trainable variables) and
        returns the op that updates them all."""
        if var_list is None:
            var_list = _variables.trainable_variables()
        var_list = list(var_list)
        for var in var_list:
            if var.dtype.base_dtype not in _FLOATS:
                raise TypeError(f"The variables must be half, float, or double: {var.name}")
            if self._key(var) in self._averages:
                raise ValueError(f"Moving average already computed for: {var.name}")
            self._averages[self._key(var)] = _create_shadow(var, self._name)
            if _is_variable(var):
                _ops.add_to_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, var)
        with _ops.name_scope(self._name) as scope:
            decay = _ops.convert_to_tensor(self._decay, name="decay")
            if self._num_updates is not None:
                num_updates = _m.cast(self._num_updates, dtypes.float32, name="num_updates")
                decay = _m.minimum(decay, (1.0 + num_updates) / (10.0 + num_updates))
            updates = [_assign_moving_average(self._averages[self._key(v)], v, decay)
                       for v in var_list]
            return control_flow_ops.group(*updates, name=scope)

    @staticmethod
    def _key(var):
        # Variables and tensors are keyed by their graph element, as TF keys by ref().
        return (var.graph, var.name)

    def average(self, var):
        """The shadow of ``var``, or None if ``apply`` has not seen it."""
        return self._averages.get(self._key(var))

    def average_name(self, var):
        """The name ``var``'s shadow has (or would get): its key in checkpoints."""
        shadow = self.average(var)
        if shadow is not None:
            return shadow.op.name
        return _ops.get_default_graph().unique_name(var.op.name + "/" + self._name,
                                                    mark_as_used=False)

    def variables_to_restore(self, moving_avg_variables=None):
        """{checkpoint name: variable} restoring each variable from its shadow's saved
        value (for evaluation with the averages) and every other global variable as is."""
        if moving_avg_variables is None:
            moving_avg_variables = (_variables.trainable_variables()
                                    + _variables.moving_average_variables())
        name_map = {}
        unique = {v.name: v for v in moving_avg_variables}
        for v in unique.values():
            name_map[self.average_name(v)] = v
        for v in _variables.global_variables():
            if v.name not in unique and v.op.name not in name_map:
                name_map[v.op.name] = v
        return name_map
