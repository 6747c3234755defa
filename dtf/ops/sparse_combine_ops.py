"""tf.sparse ops that build a new index set: reshape (SparseReshape), add (SparseAdd for
sparse + sparse with TF's ``thresh``, SparseTensorDenseAdd for sparse + dense) and concat
(SparseConcat, with ``expand_nonconcat_dim``). Kernels: dtf/kernels/reference/sparse_combine.py.

Gradients are TF's: SparseAdd's values get theirs through SparseAddGrad (which entry of the
sum each input entry went to), SparseTensorDenseAdd's sparse values a gather_nd of the
output gradient; SparseConcat and SparseAddGrad are not differentiable in TF either, and
reshape passes the values through an Identity, so their gradient is the Identity's.
"""
from __future__ import annotations

import numpy as np

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import NotDifferentiable, RegisterGradient, register_op
from dtf.framework.tensor_shape import TensorShape
from .common import const_value, convert
from .sparse_ops import SparseTensor, SparseTensorValue

__all__ = ["sparse_reshape", "sparse_add", "sparse_concat"]


def _as_sparse_or_none(x):
    if isinstance(x, SparseTensorValue):
        return SparseTensor.from_value(x)
    return x if isinstance(x, SparseTensor) else None


def _vector_len(t):
    n = t.shape.as_tuple_or_none()
    return n[0] if n else None


# -- reshape -----------------------------------------------------------------------------
@register_op("SparseReshape")
def _sparse_reshape_infer(inputs, attrs):
    indices, _, new_shape = inputs
    n = indices.shape.as_tuple_or_none()
    rank = _vector_len(new_shape)
    return [(dtypes.int64, TensorShape([n[0] if n else None, rank])),
            (dtypes.int64, TensorShape([rank]))]


def sparse_reshape(sp_input, shape, name=None):
    """The same entries of ``sp_input`` under a new dense shape (row-major order kept; one
    dim may be -1). When both shapes are known while the graph is built, a size mismatch is
    a ValueError there and the result's dense shape is a constant, as in TF."""
    sp_input = _require_sparse(sp_input, "sp_input")
    with _ops.name_scope(name, "SparseReshape", [sp_input]) as scope:
        shape = convert(shape, "shape", dtype=dtypes.int64)
        op = _ops.make_op("SparseReshape", [sp_input.indices, sp_input.dense_shape, shape], {},
                          name=scope)
        out_indices, out_shape = op.outputs
        wanted = const_value(shape)
        known = sp_input.get_shape()
        if wanted is not None and known.is_fully_defined():
            out_shape = _static_reshape(known.as_list(), [int(d) for d in wanted.reshape(-1)])
        from .array_ops import identity
        return SparseTensor(out_indices, identity(sp_input.values), out_shape)


def _static_reshape(in_shape, wanted):
    implied = [i for i, d in enumerate(wanted) if d == -1]
    if len(implied) > 1:
        raise ValueError(f"At most one dimension can be inferred (-1). Found: {wanted}")
    size = int(np.prod(in_shape, dtype=np.int64))
    out = list(wanted)
    if implied:
        rest = int(np.prod([d for d in wanted if d != -1], dtype=np.int64))
        out[implied[0]] = size // rest if rest else 0
    if int(np.prod(out, dtype=np.int64)) != size:
        raise ValueError(f"Cannot reshape a tensor with {size} elements to shape {wanted} "
                         f"({int(np.prod(out, dtype=np.int64))} elements).")
    return np.asarray(out, np.int64)


# -- add ---------------------------------------------------------------------------------
@register_op("SparseAdd")
def _sparse_add_infer(inputs, attrs):
    a_indices, a_values, a_shape = inputs[:3]
    rank = a_indices.shape.as_tuple_or_none()
    return [(dtypes.int64, TensorShape([None, rank[1] if rank else None])),
            (a_values.dtype, TensorShape([None])), (dtypes.int64, a_shape.shape)]


@register_op("SparseAddGrad")
def _sparse_add_grad_infer(inputs, attrs):
    grad, a_indices, b_indices, _ = inputs
    a_n, b_n = (t.shape.as_tuple_or_none() for t in (a_indices, b_indices))
    return [(grad.dtype, TensorShape([a_n[0] if a_n else None])),
            (grad.dtype, TensorShape([b_n[0] if b_n else None]))]


@register_op("SparseTensorDenseAdd")
def _sparse_tensor_dense_add_infer(inputs, attrs):
    return [(inputs[3].dtype, inputs[3].shape)]


def sparse_add(a, b, thresh=0, name=None):
    """a + b where at least one is a SparseTensor. Two SparseTensors (of one dense shape,
    both in canonical order) give a SparseTensor; an entry both have is dropped when the
    magnitude of its sum is below ``thresh``. A SparseTensor and a dense tensor give a
    dense tensor (``thresh`` is not used)."""
    sp_a, sp_b = _as_sparse_or_none(a), _as_sparse_or_none(b)
    if sp_a is None and sp_b is None:
        raise TypeError("At least one input should be SparseTensor; do you mean to use tf.add()?")
    if sp_a is not None and sp_b is not None:
        with _ops.name_scope(name, "SparseAdd", [sp_a, sp_b, thresh]) as scope:
            thresh = convert(thresh, "thresh", dtype=_real_dtype(sp_a.dtype))
            b_values = convert(sp_b.values, "b_values", dtype=sp_a.dtype)
            op = _ops.make_op("SparseAdd", [sp_a.indices, sp_a.values, sp_a.dense_shape,
                                            sp_b.indices, b_values, sp_b.dense_shape, thresh],
                              {"T": sp_a.dtype, "Treal": thresh.dtype}, name=scope)
            out_shape = op.outputs[2]
            known = sp_a.get_shape()
            if known.is_fully_defined():  # the kernel checks b's shape equals a's
                out_shape = np.asarray(known.as_list(), np.int64)
            return SparseTensor(op.outputs[0], op.outputs[1], out_shape)
    sparse, dense = (sp_a, b) if sp_a is not None else (sp_b, a)
    with _ops.name_scope(name, "SparseTensorDenseAdd", [sparse, dense]) as scope:
        dense = convert(dense, "b", dtype=sparse.dtype)
        return _ops.make_tensor("SparseTensorDenseAdd",
                                [sparse.indices, sparse.values, sparse.dense_shape, dense],
                                {"T": sparse.dtype, "Tindices": dtypes.int64}, name=scope)


def _real_dtype(dtype):
    # TF's thresh has the values' real dtype; dtf has no complex dtypes, so it is theirs.
    return dtype.base_dtype


@RegisterGradient("SparseAdd")
def _sparse_add_grad(op, *grads):
    """TF's rule: the output values' gradient goes back to the a and b entries that made
    each output entry (SparseAddGrad matches the index sets)."""
    val_grad = grads[1]
    a_indices, b_indices = op.inputs[0], op.inputs[3]
    g = _ops.make_op("SparseAddGrad", [val_grad, a_indices, b_indices, op.outputs[0]],
                     {"T": val_grad.dtype}, name=None)
    return [None, g.outputs[0], None, None, g.outputs[1], None, None]


@RegisterGradient("SparseTensorDenseAdd")
def _sparse_tensor_dense_add_grad(op, grad):
    from .scatter_nd_ops import gather_nd

    return [None, gather_nd(grad, op.inputs[0]), None, grad]


NotDifferentiable("SparseAddGrad")


# -- concat ------------------------------------------------------------------------------
@register_op("SparseConcat")
def _sparse_concat_infer(inputs, attrs):
    n = attrs["N"]
    indices, values = inputs[:n], inputs[n:2 * n]
    counts = [i.shape.as_tuple_or_none() for i in indices]
    total = sum(c[0] for c in counts) if all(c and c[0] is not None for c in counts) else None
    rank = next((c[1] for c in counts if c and c[1] is not None), None)
    return [(dtypes.int64, TensorShape([total, rank])), (values[0].dtype, TensorShape([total])),
            (dtypes.int64, TensorShape([rank]))]


def sparse_concat(axis, sp_inputs, name=None, expand_nonconcat_dim=False, concat_dim=None):
    """The SparseTensors ``sp_inputs`` joined along ``axis``, in canonical order. Their
    dense shapes must agree off ``axis`` unless ``expand_nonconcat_dim``, which grows each
    to the largest size there."""
    if concat_dim is not None:
        if axis is not None:
            raise ValueError("Cannot specify both 'axis' and 'concat_dim'")
        axis = concat_dim
    if axis is None:
        raise ValueError("sparse_concat needs axis")
    axis = int(axis)
    sp_inputs = [_require_sparse(s, f"sp_inputs[{i}]") for i, s in enumerate(sp_inputs)]
    if not sp_inputs:
        raise ValueError("sparse_concat needs at least one SparseTensor")
    if len(sp_inputs) == 1:
        return sp_inputs[0]
    with _ops.name_scope(name, "SparseConcat", sp_inputs) as scope:
        shapes = [s.dense_shape for s in sp_inputs]
        if expand_nonconcat_dim:
            shapes = _expanded_shapes(shapes, axis)
        values = [convert(s.values, f"values_{i}", dtype=sp_inputs[0].dtype)
                  for i, s in enumerate(sp_inputs)]
        n = len(sp_inputs)
        op = _ops.make_op("SparseConcat", [s.indices for s in sp_inputs] + values + shapes,
                          {"T": values[0].dtype, "N": n, "concat_dim": axis}, name=scope)
        out_shape = op.outputs[2]
        known = [const_value(s) for s in shapes]
        if all(k is not None for k in known):
            dims = [k.reshape(-1).astype(np.int64) for k in known]
            out = dims[0].copy()
            out[axis] = sum(int(d[axis]) for d in dims)
            out_shape = out
        return SparseTensor(op.outputs[0], op.outputs[1], out_shape)


def _expanded_shapes(shapes, axis):
    """TF's expand_nonconcat_dim: each shape takes the elementwise max of all shapes off
    ``axis`` and keeps its own size on it."""
    from . import array_ops
    from .reduction_ops import reduce_max

    known = [const_value(s) for s in shapes]
    if all(k is not None for k in known):
        stacked = np.stack([k.reshape(-1).astype(np.int64) for k in known])
        top = stacked.max(axis=0)
        out = []
        for row in stacked:
            shape = top.copy()
            shape[axis] = row[axis]
            out.append(convert(shape, "expanded_shape", dtype=dtypes.int64))
        return out
    top = reduce_max(array_ops.stack(shapes), 0)
    out = []
    for s in shapes:
        own = s[-1:] if axis == -1 else s[axis:axis + 1]
        tail = [] if axis == -1 else [top[axis + 1:]]
        out.append(array_ops.concat([top[:axis], own] + tail, 0))
    return out


NotDifferentiable("SparseConcat")


def _require_sparse(x, what):
    sp = _as_sparse_or_none(x)
    if sp is None:
        raise TypeError(f"Input must be a SparseTensor, got {what}={x!r}")
    return sp

