"""tf.sparse basics beyond the SparseTensor itself: reorder (the SparseReorder op, with
TF's gradient), retain, reduce_sum and sparse_tensor_dense_matmul (composites of
registered ops, so their gradients come with them: the dense operand's gradient of a
sparse-dense matmul is IndexedSlices of the rows the sparse operand names).
"""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import RegisterGradient, register_op
from dtf.framework.tensor_shape import TensorShape
from . import array_ops, math_ops
from .sparse_ops import SparseTensor, _as_sparse, sparse_to_dense

__all__ = ["sparse_reorder", "sparse_retain", "sparse_reduce_sum",
           "sparse_tensor_dense_matmul"]


@register_op("SparseReorder")
def _sparse_reorder_infer(inputs, attrs):
    indices, values, _ = inputs
    return [(dtypes.int64, indices.shape), (values.dtype, values.shape)]


def sparse_reorder(sp_input, name=None):
    """The same SparseTensor with its entries in row-major (canonical) order."""
    sp_input = _as_sparse(sp_input, "sp_input")
    with _ops.name_scope(name, "SparseReorder", [sp_input.indices, sp_input.values]) as scope:
        op = _ops.make_op("SparseReorder", [sp_input.indices, sp_input.values,
                                            sp_input.dense_shape],
                          {"T": sp_input.dtype}, name=scope)
    return SparseTensor(op.outputs[0], op.outputs[1], sp_input.dense_shape)


@RegisterGradient("SparseReorder")
def _sparse_reorder_grad(op, unused_indices_grad, values_grad):
    """The values' gradient put back in input order (TF's rule: reorder a range, invert)."""
    indices, values, shape = op.inputs
    n = array_ops.shape(values)[0]
    positions = sparse_reorder(SparseTensor(indices, math_ops.cast(array_ops.range(n),
                                                                   dtypes.int64), shape))
    inverted = array_ops.invert_permutation(math_ops.cast(positions.values, dtypes.int32))
    return [None, array_ops.gather(values_grad, inverted), None]


def sparse_retain(sp_input, to_retain):
    """The entries of ``sp_input`` whose ``to_retain`` flag (a bool vector) is set."""
    sp_input = _as_sparse(sp_input, "sp_input")
    to_retain = _ops.convert_to_tensor(to_retain, dtype=dtypes.bool)
    if to_retain.shape.ndims not in (None, 1):
        raise ValueError(f"to_retain must be a vector, got shape {to_retain.shape}")
    where = array_ops.reshape(math_ops.cast(math_ops.where(to_retain), dtypes.int32), [-1])
    return SparseTensor(array_ops.gather(sp_input.indices, where),
                        array_ops.gather(sp_input.values, where), sp_input.dense_shape)


def sparse_reduce_sum(sp_input, axis=None, keepdims=None, reduction_axes=None, keep_dims=None):
    """Sum of the entries of ``sp_input`` over ``axis`` (all axes when None), dense."""
    from .reduction_ops import reduce_sum

    sp_input = _as_sparse(sp_input, "sp_input")
    axis = reduction_axes if axis is None else axis
    keepdims = bool(keep_dims if keepdims is None else keepdims)
    if axis is None and not keepdims:
        return reduce_sum(sp_input.values)
    dense = sparse_to_dense(sp_input.indices, sp_input.dense_shape, sp_input.values,
                            validate_indices=False)
    return reduce_sum(dense, axis, keepdims=keepdims)


def sparse_tensor_dense_matmul(sp_a, b, adjoint_a=False, adjoint_b=False, name=None):
    """The dense product of the rank-2 SparseTensor ``sp_a`` and the matrix ``b``:
    out[i] = sum over entries (i, k, v) of v * b[k]."""
    sp_a = _as_sparse(sp_a, "sp_a")
    with _ops.name_scope(name, "SparseTensorDenseMatMul", [sp_a.indices, sp_a.values, b]):
        b = _ops.convert_to_tensor(b, name="b")
        if adjoint_b:
            b = array_ops.transpose(b)
        rows, cols = sp_a.indices[:, 0], sp_a.indices[:, 1]
        out_rows = sp_a.dense_shape[0]
        if adjoint_a:
            rows, cols, out_rows = cols, rows, sp_a.dense_shape[1]
        picked = array_ops.gather(b, cols) * array_ops.expand_dims(sp_a.values, 1)
        out = array_ops.unsorted_segment_sum(picked, rows, out_rows)
        known = sp_a.get_shape()
        if known.ndims == 2 and b.shape.ndims == 2:
            out.set_shape(TensorShape([known[1] if adjoint_a else known[0], b.shape[1]]))
        return out
