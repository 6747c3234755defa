"""TF1's learning-rate schedules: tensors of the global step, built from registered ops.

Each takes the step as a tensor (usually the global step) and returns the decayed rate
in the learning rate's dtype, under TF's name scope (``ExponentialDecay``, ...). Where
TF1 picks a branch with ``tf.cond``/``tf.case`` (piecewise_constant, polynomial_decay's
cycle, cosine_decay_restarts), dtf selects with ``where``: the values are the same.
"""
from __future__ import annotations

import math

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.ops import math_ops as _m

__all__ = ["exponential_decay", "inverse_time_decay", "natural_exp_decay", "piecewise_constant",
           "polynomial_decay", "cosine_decay", "cosine_decay_restarts", "linear_cosine_decay"]


def _require_step(global_step, fn_name):
    if global_step is None:
        raise ValueError(f"global_step is required for {fn_name}.")


def _rate_and_step(learning_rate, global_step):
    """(learning rate tensor, the step cast to its dtype)."""
    lr = _ops.convert_to_tensor(learning_rate, name="learning_rate")
    return lr, _m.cast(global_step, lr.dtype)


def _decay_fraction(step, decay_steps, dtype, staircase):
    p = _m.truediv(step, _m.cast(decay_steps, dtype))
    return _m.floor(p) if staircase else p


def exponential_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """learning_rate * decay_rate ** (global_step / decay_steps), the exponent floored
    when ``staircase``."""
    _require_step(global_step, "exponential_decay")
    with _ops.name_scope(name, "ExponentialDecay",
                         [learning_rate, global_step, decay_steps, decay_rate]) as scope:
        lr, step = _rate_and_step(learning_rate, global_step)
        p = _decay_fraction(step, decay_steps, lr.dtype, staircase)
        return _m.multiply(lr, _m.pow(_m.cast(decay_rate, lr.dtype), p), name=scope)


def natural_exp_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                      name=None):
    """learning_rate * exp(-decay_rate * global_step / decay_steps); as in TF, an
    exponential_decay by exp(-decay_rate) (and named like one)."""
    _require_step(global_step, "natural_exp_decay")
    natural_rate = _m.exp(_m.negative(_ops.convert_to_tensor(decay_rate)))
    return exponential_decay(learning_rate, global_step, decay_steps, natural_rate,
                             staircase=staircase, name=name)


def inverse_time_decay(learning_rate, global_step, decay_steps, decay_rate, staircase=False,
                       name=None):
    """learning_rate / (1 + decay_rate * global_step / decay_steps)."""
    _require_step(global_step, "inverse_time_decay")
    with _ops.name_scope(name, "InverseTimeDecay",
                         [learning_rate, global_step, decay_rate]) as scope:
        lr, step = _rate_and_step(learning_rate, global_step)
        p = _decay_fraction(step, decay_steps, lr.dtype, staircase)
        denom = _m.add(_m.cast(1, lr.dtype), _m.multiply(_m.cast(decay_rate, lr.dtype), p))
        return _m.truediv(lr, denom, name=scope)


def polynomial_decay(learning_rate, global_step, decay_steps, end_learning_rate=0.0001,
                     power=1.0, cycle=False, name=None):
    """(learning_rate - end) * (1 - step / decay_steps) ** power + end; the step stops at
    decay_steps, or with ``cycle`` decay_steps grows to the next multiple past the step."""
    _require_step(global_step, "polynomial_decay")
    with _ops.name_scope(name, "PolynomialDecay",
                         [learning_rate, global_step, decay_steps, end_learning_rate, power]) as scope:
        lr, step = _rate_and_step(learning_rate, global_step)
        dtype = lr.dtype
        end_lr = _m.cast(end_learning_rate, dtype)
        power = _m.cast(power, dtype)
        steps = _m.cast(decay_steps, dtype)
        if cycle:
            # Step 0 counts as the first cycle (ceil(0) would make decay_steps 0).
            multiplier = _m.where(_m.equal(step, _m.cast(0, dtype)), _m.cast(1.0, dtype),
                                  _m.ceil(step / steps))
            steps = _m.multiply(steps, multiplier)
        else:
            step = _m.minimum(step, steps)
        p = _m.truediv(step, steps)
        return _m.add(_m.multiply(lr - end_lr, _m.pow(1 - p, power)), end_lr, name=scope)


def piecewise_constant(x, boundaries, values, name=None):
    """values[0] while x <= boundaries[0], values[i] while boundaries[i-1] < x <=
    boundaries[i], values[-1] past the last boundary."""
    if len(boundaries) != len(values) - 1:
        raise ValueError("The length of boundaries should be 1 less than the length of values")
    with _ops.name_scope(name, "PiecewiseConstant", [x, boundaries, values]) as scope:
        x = _ops.convert_to_tensor(x)
        boundaries = [_boundary(b, x.dtype, i) for i, b in enumerate(boundaries)]
        values = [_ops.convert_to_tensor(v) for v in values]
        for v in values[1:]:
            if v.dtype.base_dtype != values[0].dtype.base_dtype:
                raise ValueError(f"Values must have elements all with the same dtype "
                                 f"({values[0].dtype.base_dtype} vs {v.dtype.base_dtype}).")
        # Right to left: each boundary overrides what lies past it.
        result = values[-1]
        for b, v in zip(reversed(boundaries), reversed(values[:-1])):
            result = _m.where(_m.less_equal(x, b), v, result)
        return _identity(result, scope)


def _boundary(b, dtype, index):
    """A boundary in x's dtype: int32 boundaries for an int64 x are cast, as in TF1."""
    t = _ops.convert_to_tensor(b)
    if t.dtype.base_dtype == dtype.base_dtype:
        return t
    if t.dtype.base_dtype == dtypes.int32 and dtype.base_dtype == dtypes.int64:
        return _m.cast(t, dtype)
    raise ValueError(f"Boundaries ({t.dtype.base_dtype}, boundary {index}) must have the same "
                     f"dtype as x ({dtype.base_dtype}).")


def _identity(t, name):
    from dtf.ops.array_ops import identity

    return identity(t, name=name)


def cosine_decay(learning_rate, global_step, decay_steps, alpha=0.0, name=None):
    """Cosine decay (Loshchilov & Hutter) from learning_rate to alpha * learning_rate over
    decay_steps, then flat."""
    _require_step(global_step, "cosine_decay")
    with _ops.name_scope(name, "CosineDecay", [learning_rate, global_step]) as scope:
        lr, step = _rate_and_step(learning_rate, global_step)
        dtype = lr.dtype
        steps = _m.cast(decay_steps, dtype)
        fraction = _m.minimum(step, steps) / steps
        cosine = 0.5 * (1.0 + _m.cos(_m.cast(math.pi, dtype) * fraction))
        alpha = _m.cast(alpha, dtype)
        return _m.multiply(lr, (1 - alpha) * cosine + alpha, name=scope)


def cosine_decay_restarts(learning_rate, global_step, first_decay_steps, t_mul=2.0, m_mul=1.0,
                          alpha=0.0, name=None):
    """Cosine decay with warm restarts (SGDR): period i lasts first_decay_steps * t_mul**i
    steps and starts at learning_rate * m_mul**i."""
    _require_step(global_step, "cosine_decay_restarts")
    with _ops.name_scope(name, "SGDRDecay", [learning_rate, global_step]) as scope:
        lr, step = _rate_and_step(learning_rate, global_step)
        dtype = lr.dtype
        fraction = step / _m.cast(first_decay_steps, dtype)
        t_mul, m_mul = _m.cast(t_mul, dtype), _m.cast(m_mul, dtype)
        alpha = _m.cast(alpha, dtype)
        # Periods of equal length when t_mul == 1, else geometrically growing ones.
        i_equal = _m.floor(fraction)
        i_geometric = _m.floor(_m.log(1.0 - fraction * (1.0 - t_mul)) / _m.log(t_mul))
        sum_r = (1.0 - _m.pow(t_mul, i_geometric)) / (1.0 - t_mul)
        same = _m.equal(t_mul, _m.cast(1.0, dtype))
        i_restart = _m.where(same, i_equal, i_geometric)
        fraction = _m.where(same, fraction - i_equal,
                            (fraction - sum_r) / _m.pow(t_mul, i_geometric))
        cosine = 0.5 * _m.pow(m_mul, i_restart) * (1.0 + _m.cos(_m.cast(math.pi, dtype) * fraction))
        return _m.multiply(lr, (1 - alpha) * cosine + alpha, name=scope)


def linear_cosine_decay(learning_rate, global_step, decay_steps, num_periods=0.5, alpha=0.0,
                        beta=0.001, name=None):
    """Linear times cosine decay (Bello et al.): learning_rate * ((alpha + linear) * cosine
    + beta), the step stopping at decay_steps."""
    _require_step(global_step, "linear_cosine_decay")
    with _ops.name_scope(name, "LinearCosineDecay", [learning_rate, global_step]) as scope:
        lr, step = _rate_and_step(learning_rate, global_step)
        dtype = lr.dtype
        steps = _m.cast(decay_steps, dtype)
        step = _m.minimum(step, steps)
        linear = (steps - step) / steps
        fraction = 2.0 * _m.cast(num_periods, dtype) * (step / steps)
        cosine = 0.5 * (1.0 + _m.cos(_m.cast(math.pi, dtype) * fraction))
        decayed = (_m.cast(alpha, dtype) + linear) * cosine + _m.cast(beta, dtype)
        return _m.multiply(lr, decayed, name=scope)
