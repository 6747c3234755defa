"""Reductions (sum, mean, max, min, prod, any, all) and argmax/argmin."""
from __future__ import annotations

import numpy as np

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import register_op
from dtf.framework.tensor_shape import TensorShape, unknown_shape
from .common import const_value, convert

# (public name, op type, needs bool input)
REDUCTIONS = [("reduce_sum", "Sum", False), ("reduce_mean", "Mean", False),
              ("reduce_max", "Max", False), ("reduce_min", "Min", False),
              ("reduce_prod", "Prod", False), ("reduce_any", "Any", True),
              ("reduce_all", "All", True)]


def reduced_shape(shape: TensorShape, axes, keep_dims: bool, op_name="") -> TensorShape:
    """Static output shape of a reduction over ``axes`` (None: axes unknown)."""
    if shape.ndims is None:
        return unknown_shape()
    nd = shape.ndims
    if axes is None:
        return unknown_shape(nd) if keep_dims else unknown_shape()
    norm = set()
    for a in np.asarray(axes).reshape(-1):
        a = int(a)
        if a < -nd or a >= nd:
            raise ValueError(f"Invalid reduction dimension {a} for input with {nd} dimensions. "
                             f"for '{op_name}'")
        norm.add(a % nd if nd else 0)
    dims = shape.as_tuple_or_none()
    if keep_dims:
        return TensorShape([1 if i in norm else d for i, d in enumerate(dims)])
    return TensorShape([d for i, d in enumerate(dims) if i not in norm])


def _reduction_infer(inputs, attrs):
    x, axes = inputs
    return [(x.dtype, reduced_shape(x.shape, const_value(axes), attrs.get("keep_dims", False),
                                    attrs.get("_op_name", "")))]


for _fn, _op, _ in REDUCTIONS:
    register_op(_op)(_reduction_infer)


def _axes_tensor(x, axis, name="reduction_indices"):
    if axis is None:
        nd = x.shape.ndims
        if nd is not None:
            from .constant_op import constant

            return constant(np.arange(nd, dtype=np.int32), name="Const")
        from .array_ops import rank, range as range_

        return range_(0, rank(x))
    return convert(axis, name, hint=dtypes.int32)


def _make_reduction(op_type, is_bool):
    def fn(input_tensor, axis=None, keepdims=None, name=None, reduction_indices=None,
           keep_dims=None):
        if axis is not None and reduction_indices is not None:
            raise ValueError("Can not specify both 'axis' and 'reduction_indices'.")
        if axis is None:
            axis = reduction_indices
        keep = bool(keepdims if keepdims is not None else (keep_dims or False))
        x = convert(input_tensor, "input", dtype=dtypes.bool if is_bool else None)
        axes = _axes_tensor(x, axis)
        return _ops.make_tensor(op_type, [x, axes], {"T": x.dtype, "keep_dims": keep,
                                                     "Tidx": axes.dtype}, name=name or op_type)

    fn.__name__ = op_type
    return fn


_g = globals()
for _fn, _op, _b in REDUCTIONS:
    _g[_fn] = _make_reduction(_op, _b)


def reduce_logsumexp(input_tensor, axis=None, keepdims=False, name=None):
    from . import math_ops

    with _ops.name_scope(name, "ReduceLogSumExp", [input_tensor]):
        x = convert(input_tensor)
        m = reduce_max(x, axis, keepdims=True)  # noqa: F821
        from .array_ops import stop_gradient

        m = stop_gradient(m)
        s = math_ops.log(reduce_sum(math_ops.exp(x - m), axis, keepdims=True)) + m  # noqa: F821
        if not keepdims:
            from .array_ops import squeeze

            s = squeeze(s, axis=axis if axis is None else list(np.atleast_1d(axis)))
        return s


def count_nonzero(input_tensor, axis=None, keepdims=False, dtype=dtypes.int64, name=None):
    from . import math_ops

    with _ops.name_scope(name, "count_nonzero", [input_tensor]):
        x = convert(input_tensor)
        nz = math_ops.not_equal(x, np.zeros((), x.dtype.as_numpy_dtype))
        return reduce_sum(math_ops.cast(nz, dtype), axis, keepdims=keepdims)  # noqa: F821


def reduce_variance(input_tensor, axis=None, keepdims=False, name=None):
    """The variance over ``axis`` (TF's tf.math.reduce_variance: the population variance,
    the mean of the squared deviations from the mean)."""
    from . import math_ops

    with _ops.name_scope(name, "reduce_variance", [input_tensor]):
        x = convert(input_tensor)
        if not x.dtype.is_floating:
            raise TypeError(f"Input must be a floating point type, got {x.dtype.name}")
        mean = reduce_mean(x, axis, keepdims=True)  # noqa: F821
        return reduce_mean(math_ops.square(x - mean), axis, keepdims=keepdims)  # noqa: F821


def reduce_std(input_tensor, axis=None, keepdims=False, name=None):
    """The standard deviation over ``axis``: the square root of ``reduce_variance``."""
    from . import math_ops

    with _ops.name_scope(name, "reduce_std", [input_tensor]):
        return math_ops.sqrt(reduce_variance(input_tensor, axis, keepdims=keepdims))


def reduce_euclidean_norm(input_tensor, axis=None, keepdims=False, name=None):
    """sqrt(sum(x**2)) over ``axis``."""
    from . import math_ops

    with _ops.name_scope(name, "reduce_euclidean_norm", [input_tensor]):
        x = convert(input_tensor)
        return math_ops.sqrt(reduce_sum(math_ops.square(x), axis, keepdims=keepdims))  # noqa: F821


@register_op("ArgMax")
def _argmax_infer(inputs, attrs):
    return _arg_infer(inputs, attrs)


@register_op("ArgMin")
def _argmin_infer(inputs, attrs):
    return _arg_infer(inputs, attrs)


def _arg_infer(inputs, attrs):
    x, axis = inputs
    return [(attrs["output_type"], reduced_shape(x.shape, const_value(axis), False))]


def _make_arg(op_type):
    def fn(input, axis=None, name=None, dimension=None, output_type=dtypes.int64):  # noqa: A002
        if axis is not None and dimension is not None:
            raise ValueError("Cannot specify both 'axis' and 'dimension'")
        if axis is None:
            axis = dimension if dimension is not None else 0
        x = convert(input, "input")
        a = convert(axis, "dimension", hint=dtypes.int32)
        return _ops.make_tensor(op_type, [x, a], {"T": x.dtype, "output_type": dtypes.as_dtype(output_type)},
                                name=name or op_type)

    return fn


argmax = _make_arg("ArgMax")
argmin = _make_arg("ArgMin")


def arg_max(input, dimension, output_type=dtypes.int64, name=None):  # noqa: A002
    """TF 1.x's raw ArgMax: the index of the largest value along ``dimension``."""
    return argmax(input, dimension, name=name, output_type=output_type)


def arg_min(input, dimension, output_type=dtypes.int64, name=None):  # noqa: A002
    """TF 1.x's raw ArgMin: the index of the smallest value along ``dimension``."""
    return argmin(input, dimension, name=name, output_type=output_type)


@register_op("ReducedShape")
def _reduced_shape_infer(inputs, attrs):
    return [(inputs[0].dtype, inputs[0].shape)]


def reduced_shape_tensor(input_shape, axes, name=None):
    """The shape a reduction over ``axes`` keeps when keep_dims=True (axes set to 1).

    Built from TF's own ops as TF's math_ops.reduced_shape does (DynamicStitch of the
    input shape and ones at ``axes``), so gradient graphs import into TF; the dtf-only
    ReducedShape op stays registered for graphs dtf exported before."""
    from dtf.ops import array_ops, math_ops
    from dtf.ops.segment_ops import dynamic_stitch

    with _ops.name_scope(name, "ReducedShape", [input_shape, axes]):
        input_shape = math_ops.cast(input_shape, dtypes.int32)
        axes = math_ops.cast(axes, dtypes.int32)
        rank = array_ops.size(input_shape)
        axes = math_ops.floormod(axes + rank, rank)
        return dynamic_stitch([array_ops.range(rank), axes],
                              [input_shape, array_ops.fill(array_ops.shape(axes), 1)])


from . import reduction_grad  # noqa: E402,F401  (registers the gradients)

# Public names: ``__all__`` is what ``import dtf`` exports from this family (tf.*), and
# MATH_API what tf.math does (dtf/math.py reads both; a new function is listed here only).
__all__ = [fn for fn, *_ in REDUCTIONS] + [
    "reduce_logsumexp", "count_nonzero", "argmax", "argmin", "arg_max", "arg_min"]
MATH_API = [fn for fn in __all__ if fn not in ("arg_max", "arg_min")] + [
    "reduce_variance", "reduce_std", "reduce_euclidean_norm"]
