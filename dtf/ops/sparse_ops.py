"""tf.SparseTensor and its basics: SparseTensorValue (fed and fetched through Session.run),
sparse_placeholder, sparse_to_dense / sparse_tensor_to_dense (the SparseToDense op, with
TF's gradient).

A SparseTensor is three tensors, like IndexedSlices a plain composite and no op of its
own: ``indices`` (int64 [N, rank]), ``values`` ([N]) and ``dense_shape`` (int64 [rank]).
"""
from __future__ import annotations

import collections

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.indexed_slices import static_shape_value
from dtf.framework.op_registry import RegisterGradient, register_op
from dtf.framework.tensor_shape import TensorShape, unknown_shape
from .common import convert, shape_from_tensor

__all__ = ["SparseTensor", "SparseTensorValue", "sparse_placeholder", "sparse_to_dense",
           "sparse_tensor_to_dense"]

SparseTensorValue = collections.namedtuple("SparseTensorValue",
                                           ["indices", "values", "dense_shape"])


class SparseTensor:
    """A sparse tensor: ``values[i]`` sits at ``indices[i]`` of a ``dense_shape`` tensor
    that is zero elsewhere."""

    def __init__(self, indices, values, dense_shape):
        with _ops.name_scope(None, "SparseTensor", [indices, values, dense_shape]):
            indices = convert(indices, "indices", dtype=dtypes.int64)
            values = convert(values, "values")
            dense_shape = convert(dense_shape, "dense_shape", dtype=dtypes.int64)
        for t, rank, what in ((indices, 2, "indices"), (values, 1, "values"),
                              (dense_shape, 1, "dense_shape")):
            if t.shape.ndims not in (None, rank):
                raise ValueError(f"SparseTensor {what} must have rank {rank}, got shape {t.shape}")
        self._indices, self._values, self._dense_shape = indices, values, dense_shape

    @classmethod
    def from_value(cls, sparse_tensor_value):
        if isinstance(sparse_tensor_value, SparseTensor):
            return sparse_tensor_value
        return cls(*sparse_tensor_value)

    indices = property(lambda self: self._indices)
    values = property(lambda self: self._values)
    dense_shape = property(lambda self: self._dense_shape)
    dtype = property(lambda self: self._values.dtype)
    op = property(lambda self: self._values.op)
    graph = property(lambda self: self._indices.graph)

    def get_shape(self):
        """The static dense shape (as far as ``dense_shape`` is known when built)."""
        known = static_shape_value(self._dense_shape)
        if known is not None:
            return TensorShape(known)
        return shape_from_tensor(self._dense_shape)

    @property
    def shape(self):
        return self.get_shape()

    def eval(self, feed_dict=None, session=None):
        from dtf.client.session import get_default_session

        session = session or get_default_session()
        if session is None:
            raise ValueError("Cannot evaluate a SparseTensor without a default session; pass "
                             "session= or use `with sess.as_default():`")
        return session.run(self, feed_dict)

    def _composite_parts(self):
        """The tensors Session.run fetches (and a fed SparseTensorValue fills), in order."""
        return [self._indices, self._values, self._dense_shape], SparseTensorValue

    def __str__(self):
        return (f"SparseTensor(indices={self._indices}, values={self._values}, "
                f"dense_shape={self._dense_shape})")

    __repr__ = __str__


def sparse_placeholder(dtype, shape=None, name=None):
    """A SparseTensor to feed (with a SparseTensorValue); ``shape`` fixes its dense shape
    (a dim of None keeps it fed)."""
    from .array_ops import placeholder

    shape_name = (name + "/shape") if name is not None else None
    rank = None
    if shape is not None:
        rank = shape.get_shape()[0] if isinstance(shape, _ops.Tensor) else len(shape)
        if isinstance(shape, _ops.Tensor) or None not in list(shape):
            shape = convert(shape, shape_name, dtype=dtypes.int64)
        else:
            shape = None
    if shape is None:
        shape = placeholder(dtypes.int64, shape=[rank], name=shape_name)
    values = placeholder(dtype, shape=[None], name=(name + "/values") if name else None)
    indices = placeholder(dtypes.int64, shape=[None, rank],
                          name=(name + "/indices") if name else None)
    return SparseTensor(indices=indices, values=values, dense_shape=shape)


@register_op("SparseToDense")
def _sparse_to_dense_infer(inputs, attrs):
    indices, output_shape, values, default = inputs
    known = static_shape_value(output_shape)
    if known is not None:
        return [(values.dtype, TensorShape(known))]
    n = output_shape.shape.as_tuple_or_none()
    return [(values.dtype, unknown_shape(n[0]) if n else unknown_shape())]


def sparse_to_dense(sparse_indices, output_shape, sparse_values, default_value=0,
                    validate_indices=True, name=None):
    """A dense tensor of ``output_shape`` holding ``sparse_values`` at ``sparse_indices``
    and ``default_value`` elsewhere; with ``validate_indices`` the indices must be sorted
    and distinct."""
    with _ops.name_scope(name, "SparseToDense",
                         [sparse_indices, output_shape, sparse_values, default_value]) as scope:
        indices = convert(sparse_indices, "sparse_indices", hint=dtypes.int32)
        shape = convert(output_shape, "output_shape", dtype=indices.dtype)
        values = convert(sparse_values, "sparse_values")
        default = convert(default_value, "default_value", dtype=values.dtype)
        return _ops.make_tensor("SparseToDense", [indices, shape, values, default],
                                {"T": values.dtype, "Tindices": indices.dtype,
                                 "validate_indices": bool(validate_indices)}, name=scope)


def sparse_tensor_to_dense(sp_input, default_value=0, validate_indices=True, name=None):
    """The dense form of the SparseTensor ``sp_input`` (``default_value`` where it has none)."""
    sp_input = _as_sparse(sp_input, "sp_input")
    return sparse_to_dense(sp_input.indices, sp_input.dense_shape, sp_input.values,
                           default_value=default_value, validate_indices=validate_indices,
                           name=name)


def _as_sparse(x, what):
    if isinstance(x, SparseTensorValue):
        return SparseTensor.from_value(x)
    if not isinstance(x, SparseTensor):
        raise TypeError(f"Input must be a SparseTensor, got {what}={x!r}")
    return x


@RegisterGradient("SparseToDense")
def _sparse_to_dense_grad(op, grad):
    from . import array_ops
    from .reduction_ops import reduce_sum
    from .scatter_nd_ops import gather_nd

    indices, output_shape = op.inputs[:2]
    values_grad = gather_nd(grad, indices if indices.shape.ndims == 2
                            else array_ops.reshape(indices, [-1, 1]))
    default_grad = reduce_sum(grad) - reduce_sum(values_grad)
    return [None, None, values_grad, default_grad]
