"""unique, unique_with_counts, and sort/argsort (TF's composites over top_k: descending is
top_k along the axis, ascending sorts the negated values)."""
from __future__ import annotations

import collections

import numpy as np

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import NotDifferentiable, register_op
from dtf.framework.tensor_shape import TensorShape
from . import array_ops as A
from .array_ops import _apply
from .common import const_value, convert
from .shape_checks import rank_error

__all__ = ["unique", "unique_with_counts", "sort", "argsort"]

UniqueOutput = collections.namedtuple("Unique", ["y", "idx"])
UniqueWithCountsOutput = collections.namedtuple("UniqueWithCounts", ["y", "idx", "count"])


def _unique_infer(op_type, n_out):
    def infer(inputs, attrs):
        x = inputs[0]
        if x.shape.ndims not in (None, 1):
            raise rank_error(op_type, attrs, inputs, 1, x.shape.ndims)
        out = [(x.dtype, TensorShape([None])), (attrs["out_idx"], x.shape)]
        return out + [(attrs["out_idx"], TensorShape([None]))] * (n_out - 2)
    return infer


register_op("Unique")(_unique_infer("Unique", 2))
register_op("UniqueWithCounts")(_unique_infer("UniqueWithCounts", 3))
NotDifferentiable("Unique")
NotDifferentiable("UniqueWithCounts")


def _unique_op(op_type, x, out_idx, name):
    out_idx = dtypes.as_dtype(out_idx)
    if out_idx not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"out_idx must be int32 or int64, got {out_idx.name}")
    return _apply(op_type, name, [(x, "x", None)], lambda t: {"T": t.dtype, "out_idx": out_idx}).outputs


def unique(x, out_idx=dtypes.int32, name=None):
    """The distinct values of the 1-D ``x`` in order of first occurrence, and for each entry
    of ``x`` the position of its value in ``y``."""
    return UniqueOutput(*_unique_op("Unique", x, out_idx, name))


def unique_with_counts(x, out_idx=dtypes.int32, name=None):
    """``unique`` plus how many times each distinct value occurs."""
    return UniqueWithCountsOutput(*_unique_op("UniqueWithCounts", x, out_idx, name))


# -- sort, argsort -------------------------------------------------------------------------
def _descending(values, axis, return_indices):
    from .nn_ops import top_k

    nd = values.shape.ndims
    if nd is None:
        raise ValueError("sort needs values of known rank")
    axis = axis + nd if axis < 0 else axis
    if not 0 <= axis < nd:
        raise ValueError(f"axis {axis} is out of range for values of rank {nd}")
    perm = None
    if axis != nd - 1:
        perm = list(range(nd))
        perm[axis], perm[-1] = nd - 1, axis
        values = A.transpose(values, np.asarray(perm, np.int32), name="transposition")
    k = values.shape.as_tuple_or_none()[-1]
    k = A.shape(values)[-1] if k is None else k
    top_values, indices = top_k(values, k)
    out = indices if return_indices else top_values
    return out if perm is None else A.transpose(out, np.asarray(perm, np.int32))


def _sort_or_argsort(values, axis, direction, return_indices):
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"Argument `direction` should be one of ASCENDING, DESCENDING. "
                         f"Received: direction={direction}")
    axis_value = const_value(convert(axis, "axis")) if not isinstance(axis, (int, np.integer)) else axis
    if axis_value is None or np.ndim(axis_value) != 0:
        raise ValueError(f"Argument `axis` must be a constant scalar. Received: axis={axis}.")
    values = convert(values, "values")
    axis = int(axis_value)
    if direction == "DESCENDING":
        return _descending(values, axis, return_indices)
    dtype = values.dtype
    if dtype.is_unsigned:  # negation would wrap: mirror within the type instead
        from .constant_op import constant

        offset = constant(dtype.max, dtype=dtype)
        out = _descending(offset - values, axis, return_indices)
        return out if return_indices else offset - out
    if dtype.is_integer:  # -x - 1 keeps the most negative value representable
        out = _descending(-values - 1, axis, return_indices)
        return out if return_indices else -out - 1
    out = _descending(-values, axis, return_indices)
    return out if return_indices else -out


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """``values`` sorted along ``axis`` (ASCENDING or DESCENDING); gradients flow through
    top_k to the original positions."""
    with _ops.name_scope(name, "sort"):
        return _sort_or_argsort(values, axis, direction, return_indices=False)


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """The int32 indices that sort ``values`` along ``axis``. Always stable (equal values
    keep their order), so ``stable`` makes no difference, as in TF."""
    del stable  # top_k puts equal values in index order either way
    with _ops.name_scope(name, "argsort"):
        return _sort_or_argsort(values, axis, direction, return_indices=True)
