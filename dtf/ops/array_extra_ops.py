"""Smaller array utilities TF1 programs reach for: bincount, histogram_fixed_width, setdiff1d, unravel_index,
searchsorted, shape_n, identity_n, ensure_shape, broadcast_static_shape and
broadcast_dynamic_shape."""
from __future__ import annotations

import collections

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import NotDifferentiable, RegisterGradient, register_op
from dtf.framework.tensor_shape import TensorShape, as_shape, broadcast_shapes, unknown_shape
from . import array_ops as A
from .array_ops import _apply
from .common import convert
from .shape_checks import rank_error

__all__ = ["bincount", "histogram_fixed_width", "setdiff1d", "unravel_index", "searchsorted",
           "shape_n", "identity_n",
           "ensure_shape", "broadcast_static_shape", "broadcast_dynamic_shape"]


@register_op("Bincount")
def _bincount_infer(inputs, attrs):
    from .array_ops import _scalar_value
    return [(attrs["T"], TensorShape([_scalar_value(inputs[1])]))]


def bincount(arr, weights=None, minlength=None, maxlength=None, dtype=dtypes.int32):
    """How often each value 0..max(arr) occurs in the int32 ``arr`` (summing ``weights``
    instead of counting when given); at least ``minlength`` and at most ``maxlength`` bins."""
    from .math_ops import maximum, minimum
    from .reduction_ops import reduce_max

    with _ops.name_scope("bincount"):
        arr = convert(arr, "arr", dtype=dtypes.int32)
        # max(arr) + 1, and 0 for an empty arr (the appended -1 is its max then)
        size = reduce_max(A.concat([A.reshape(arr, [-1]), [-1]], 0)) + 1
        if minlength is not None:
            size = maximum(convert(minlength, "minlength", dtype=dtypes.int32), size)
        if maxlength is not None:
            size = minimum(convert(maxlength, "maxlength", dtype=dtypes.int32), size)
        if weights is None:
            weights = convert([], "weights", dtype=dtype)
        else:
            weights = convert(weights, "weights")
        return _ops.make_tensor("Bincount", [arr, size, weights], {"T": weights.dtype}, name="Bincount")


@register_op("HistogramFixedWidth")
def _histogram_infer(inputs, attrs):
    from .array_ops import _scalar_value
    return [(attrs["dtype"], TensorShape([_scalar_value(inputs[2])]))]


def histogram_fixed_width(values, value_range, nbins=100, dtype=dtypes.int32, name=None):
    """Counts of ``values`` in ``nbins`` equal bins over [value_range[0], value_range[1]);
    values outside the range count in the first or last bin."""
    with _ops.name_scope(name, "histogram_fixed_width", [values, value_range, nbins]) as scope:
        from .common import convert_same
        values, value_range = convert_same([values, value_range], "HistogramFixedWidth",
                                           names=("values", "value_range"))
        nbins = convert(nbins, "nbins", dtype=dtypes.int32)
        return _ops.make_tensor("HistogramFixedWidth", [values, value_range, nbins],
                                {"T": values.dtype, "dtype": dtypes.as_dtype(dtype)}, name=scope)


SetDiff1D = collections.namedtuple("ListDiff", ["out", "idx"])


@register_op("ListDiff")
def _list_diff_infer(inputs, attrs):
    for t in inputs:
        if t.shape.ndims not in (None, 1):
            raise rank_error("ListDiff", attrs, inputs, 1, t.shape.ndims)
    return [(inputs[0].dtype, TensorShape([None])), (attrs["out_idx"], TensorShape([None]))]


def setdiff1d(x, y, index_dtype=dtypes.int32, name=None):
    """The entries of 1-D ``x`` not in ``y``, in x's order, and their positions in x."""
    with _ops.name_scope(name, "ListDiff", [x, y]) as scope:
        from .common import convert_same
        x, y = convert_same([x, y], "ListDiff", names=("x", "y"))
        op = _ops.make_op("ListDiff", [x, y], {"T": x.dtype, "out_idx": dtypes.as_dtype(index_dtype)},
                          name=scope)
        return SetDiff1D(*op.outputs)


@register_op("UnravelIndex")
def _unravel_index_infer(inputs, attrs):
    indices, dims = inputs
    n = dims.shape.as_tuple_or_none()
    n = None if n is None else n[0]
    ishape = indices.shape
    if ishape.ndims is None:
        return [(indices.dtype, unknown_shape())]
    return [(indices.dtype, TensorShape([n]).concatenate(ishape) if ishape.ndims else TensorShape([n]))]


def unravel_index(indices, dims, name=None):
    """The coordinates in an array of shape ``dims`` of the flat ``indices`` (one row per
    dimension)."""
    return _apply("UnravelIndex", name, [(indices, "indices", dtypes.int32), (dims, "dims", None)],
                  lambda i, d: {"Tidx": i.dtype}).outputs[0]


def _bound_infer(inputs, attrs):
    return [(attrs["out_type"], inputs[1].shape)]


register_op("LowerBound")(_bound_infer)
register_op("UpperBound")(_bound_infer)


def searchsorted(sorted_sequence, values, side="left", out_type=dtypes.int32, name=None):
    """Where each of ``values`` would go in the sorted last dimension of ``sorted_sequence``
    ('left': before equal entries, 'right': after them); leading dimensions match."""
    if side not in ("left", "right"):
        raise ValueError(f"Argument `side` must be either 'right' or 'left'. Received: `side` = {side}.")
    with _ops.name_scope(name, "searchsorted", [sorted_sequence, values]):
        from .common import convert_same
        seq, vals = convert_same([sorted_sequence, values], "searchsorted",
                                 names=("sorted_sequence", "values"))
        op_type = "LowerBound" if side == "left" else "UpperBound"
        seq2 = A.reshape(seq, A.concat([[-1], A.shape(seq)[-1:]], 0))
        vals2 = A.reshape(vals, A.concat([[-1], A.shape(vals)[-1:]], 0))
        out = _ops.make_tensor(op_type, [seq2, vals2],
                               {"T": seq.dtype, "out_type": dtypes.as_dtype(out_type)}, name=op_type)
        result = A.reshape(out, A.shape(vals))
        result.set_shape(vals.shape)
        return result


def shape_n(input, out_type=dtypes.int32, name=None):  # noqa: A002
    """The shape of each tensor of ``input``, as a list of 1-D tensors."""
    with _ops.name_scope(name, "ShapeN", list(input)):
        return [A.shape(t, out_type=out_type) for t in input]


# One IdentityN op, as TF's: custom_gradient overrides its gradient.
from .custom_gradient import identity_n  # noqa: E402,F401


@register_op("EnsureShape")
def _ensure_shape_infer(inputs, attrs):
    want = TensorShape(attrs["shape"]) if attrs["shape"] is not None else unknown_shape()
    if not inputs[0].shape.is_compatible_with(want):
        raise ValueError(f"Shape of tensor {attrs.get('_op_name', 'EnsureShape')} "
                         f"{inputs[0].shape} is not compatible with expected shape {want}.")
    return [(inputs[0].dtype, inputs[0].shape.merge_with(want))]


def ensure_shape(x, shape, name=None):
    """``x`` unchanged, with its static shape narrowed to ``shape``; InvalidArgumentError at
    run time when the value does not have that shape."""
    dims = as_shape(shape).as_tuple_or_none()
    with _ops.name_scope(name, "EnsureShape", [x]) as scope:
        x = convert(x, "x")
        attrs = {"T": x.dtype, "shape": None if dims is None else list(dims), "_input_name": x.name}
        return _ops.make_tensor("EnsureShape", [x], attrs, name=scope)


def broadcast_static_shape(shape_x, shape_y):
    """The broadcast of two TensorShapes; ValueError when they are incompatible."""
    try:
        return broadcast_shapes(as_shape(shape_x), as_shape(shape_y))
    except ValueError:
        raise ValueError(f"Incompatible shapes for broadcasting: {shape_x} and {shape_y}") from None


register_op("BroadcastArgs")(lambda inputs, attrs: [(inputs[0].dtype, TensorShape([None]))])


def broadcast_dynamic_shape(shape_x, shape_y):
    """The broadcast of two 1-D shape tensors, as a 1-D tensor."""
    with _ops.name_scope(None, "BroadcastArgs", [shape_x, shape_y]) as scope:
        from .common import convert_same
        s0, s1 = convert_same([shape_x, shape_y], "BroadcastArgs", names=("s0", "s1"))
        return _ops.make_tensor("BroadcastArgs", [s0, s1], {"T": s0.dtype}, name=scope)


for _op in ("Bincount", "HistogramFixedWidth", "ListDiff", "UnravelIndex", "LowerBound", "UpperBound",
            "BroadcastArgs"):
    NotDifferentiable(_op)


@RegisterGradient("EnsureShape")
def _ensure_shape_grad(op, grad):
    return [grad]

MATH_API = ["bincount"]  # tf.math's share of this family
