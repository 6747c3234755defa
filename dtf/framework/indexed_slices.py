"""tf.IndexedSlices: a sparse set of rows of a dense tensor (the gradient of a gather).

A plain pair of tensors, ``values`` (rows) and ``indices`` (which rows), plus the optional
``dense_shape``. Nothing here is an op: sent between tasks it is two ordinary tensors, so a
step that touches few rows of a table moves only those rows. Converting one to a Tensor
sums its rows into a dense tensor (UnsortedSegmentSum), with TF's warning when that tensor
may be large.
"""
from __future__ import annotations

import collections
import warnings

from . import ops as _ops

# TF warns when densifying would materialise this many elements or more.
_LARGE_SPARSE_NUM_ELEMENTS = 100000000


class IndexedSlices:
    """Rows ``values[i]`` of a dense tensor of shape ``dense_shape`` at ``indices[i]``."""

    def __init__(self, values, indices, dense_shape=None):
        self._values = values
        self._indices = indices
        self._dense_shape = dense_shape

    values = property(lambda self: self._values, doc="The rows, a Tensor.")
    indices = property(lambda self: self._indices, doc="The 1-D row indices, a Tensor.")
    dense_shape = property(lambda self: self._dense_shape, doc="The dense shape, or None.")
    name = property(lambda self: self._values.name)
    device = property(lambda self: self._values.device)
    op = property(lambda self: self._values.op)
    dtype = property(lambda self: self._values.dtype)
    graph = property(lambda self: self._values.graph)

    def get_shape(self):
        """The static shape of the dense tensor these slices stand for."""
        from .tensor_shape import TensorShape, unknown_shape

        known = static_shape_value(self._dense_shape)
        if known is not None:
            return TensorShape(known)
        if self._dense_shape is None:
            return unknown_shape()
        from dtf.ops.common import shape_from_tensor

        return shape_from_tensor(self._dense_shape)

    @property
    def shape(self):
        return self.get_shape()

    def __neg__(self):
        from dtf.ops.math_ops import negative

        return IndexedSlices(negative(self._values), self._indices, self._dense_shape)

    def __str__(self):
        shape = "" if self._dense_shape is None else f", dense_shape={self._dense_shape}"
        return f"IndexedSlices(indices={self._indices}, values={self._values}{shape})"

    __repr__ = __str__

    def _composite_parts(self):
        """The tensors Session.run fetches for it, and how to rebuild the fetched value."""
        if self._dense_shape is None:
            return [self._values, self._indices], lambda v, i: IndexedSlicesValue(v, i, None)
        return [self._values, self._indices, self._dense_shape], IndexedSlicesValue


def static_shape_value(shape_tensor):
    """The dims a shape tensor is known to hold when the graph is built (a constant, the
    Shape of a fully defined tensor, or a Cast of either), else None."""
    if shape_tensor is None or not isinstance(shape_tensor, _ops.Tensor):
        return None if shape_tensor is None else [int(d) for d in shape_tensor]
    op = shape_tensor.op
    if op.type == "Const":
        return [int(d) for d in op.get_attr("value").reshape(-1)]
    if op.type == "Shape" and op.inputs[0].shape.is_fully_defined():
        return op.inputs[0].shape.as_list()
    if op.type == "Cast":
        return static_shape_value(op.inputs[0])
    return None


# What Session.run returns for a fetched IndexedSlices (numpy arrays).
IndexedSlicesValue = collections.namedtuple("IndexedSlicesValue",
                                            ["values", "indices", "dense_shape"])


def _static_num_elements(value):
    shape = value.get_shape()
    return shape.num_elements() if shape.is_fully_defined() else None


def _indexed_slices_to_tensor(value, dtype=None, name=None, as_ref=False):
    """The dense tensor of ``value``: its rows summed into dense_shape (TF's rule)."""
    from dtf.ops.array_ops import unsorted_segment_sum

    if dtype is not None and not value.dtype.is_compatible_with(dtype):
        raise ValueError(f"Tensor conversion requested dtype {dtype.name} for IndexedSlices "
                         f"with dtype {value.dtype.name}: {value}")
    if value.dense_shape is None:
        raise ValueError(f"Tensor conversion requested for IndexedSlices without dense_shape: "
                         f"{value.name}")
    n = _static_num_elements(value)
    if n is None:
        warnings.warn("Converting sparse IndexedSlices to a dense Tensor of unknown shape. "
                      "This may consume a large amount of memory.", stacklevel=3)
    elif n >= _LARGE_SPARSE_NUM_ELEMENTS:
        warnings.warn(f"Converting sparse IndexedSlices to a dense Tensor with {n} elements. "
                      "This may consume a large amount of memory.", stacklevel=3)
    dense = unsorted_segment_sum(value.values, value.indices, value.dense_shape[0], name=name)
    if value.get_shape().ndims is not None:  # what TF's shape inference folds to
        dense.set_shape(value.get_shape())
    return dense


_ops.register_tensor_conversion_function(IndexedSlices, _indexed_slices_to_tensor)


def as_indexed_slices(x):
    """``x`` as IndexedSlices: a dense tensor becomes all of its rows."""
    from dtf.ops import array_ops

    if isinstance(x, IndexedSlices):
        return x
    x = _ops.convert_to_tensor(x)
    x_shape = array_ops.shape(x)
    return IndexedSlices(x, array_ops.range(x_shape[0]), x_shape)


def concat_indexed_slices(slices):
    """Several IndexedSlices of one dense tensor as one (values and indices concatenated):
    how tf.gradients adds sparse gradients without densifying them."""
    from dtf.ops import array_ops, math_ops

    if any(s.indices.dtype != slices[0].indices.dtype for s in slices):
        from . import dtypes

        slices = [IndexedSlices(s.values, math_ops.cast(s.indices, dtypes.int64), s.dense_shape)
                  for s in slices]
    return IndexedSlices(array_ops.concat([s.values for s in slices], 0),
                         array_ops.concat([s.indices for s in slices], 0),
                         slices[0].dense_shape)
