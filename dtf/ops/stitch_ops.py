"""Ops that route rows by index: tf.unique, tf.dynamic_partition, tf.dynamic_stitch (and
parallel_dynamic_stitch), with TF's gradients. embedding_lookup over shards splits ids
with dynamic_partition and puts the looked-up rows back in order with dynamic_stitch.
References in dtf/kernels/reference/sparse.py (served as the CPU kernels).
"""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import NotDifferentiable, RegisterGradient, register_op
from dtf.framework.tensor_shape import TensorShape, unknown_shape
from .common import convert

__all__ = ["unique", "dynamic_partition", "dynamic_stitch"]


@register_op("Unique")
def _unique_infer(inputs, attrs):
    x = inputs[0]
    if x.shape.ndims not in (None, 1):
        raise ValueError(f"Shape must be rank 1 but is rank {x.shape.ndims} for "
                         f"'{attrs.get('_op_name', '')}' (op: 'Unique')")
    return [(x.dtype, TensorShape([None])), (attrs["out_idx"], x.shape)]


def unique(x, out_idx=dtypes.int32, name=None):
    """(y, idx): the distinct values of 1-D ``x`` in order of first appearance, and for
    each element of x the position of its value in y."""
    with _ops.name_scope(name, "Unique", [x]) as scope:
        x = convert(x, "x")
        op = _ops.make_op("Unique", [x], {"T": x.dtype, "out_idx": dtypes.as_dtype(out_idx)},
                          name=scope)
    return op.outputs[0], op.outputs[1]


@register_op("DynamicPartition")
def _dynamic_partition_infer(inputs, attrs):
    data, partitions = inputs
    n = attrs["num_partitions"]
    pd = partitions.shape.ndims
    if data.shape.ndims is None or pd is None:
        return [(data.dtype, unknown_shape())] * n
    if not data.shape[:pd].is_compatible_with(partitions.shape):
        raise ValueError(f"Dimensions must be equal: data.shape {data.shape} does not start "
                         f"with partitions.shape {partitions.shape} for "
                         f"'{attrs.get('_op_name', '')}' (op: 'DynamicPartition')")
    out = TensorShape([None]).concatenate(data.shape[pd:])
    return [(data.dtype, out)] * n


def dynamic_partition(data, partitions, num_partitions, name=None):
    """Splits ``data`` into ``num_partitions`` tensors: out[p] holds, in order, the slices
    of data whose ``partitions`` entry is p."""
    if not isinstance(num_partitions, int) or num_partitions < 1:
        raise ValueError(f"num_partitions must be a positive int, got {num_partitions!r}")
    with _ops.name_scope(name, "DynamicPartition", [data, partitions]) as scope:
        data = convert(data, "data")
        partitions = convert(partitions, "partitions", dtype=dtypes.int32)
        op = _ops.make_op("DynamicPartition", [data, partitions],
                          {"T": data.dtype, "num_partitions": num_partitions}, name=scope)
    return list(op.outputs)


def _stitch_infer(inputs, attrs):
    n = len(inputs) // 2
    tail = None
    for i, d in zip(inputs[:n], inputs[n:]):
        if i.shape.ndims is None or d.shape.ndims is None:
            continue
        t = d.shape[i.shape.ndims:]
        tail = t if tail is None else tail.merge_with(t)
    dtype = inputs[n].dtype
    return [(dtype, unknown_shape() if tail is None else TensorShape([None]).concatenate(tail))]


register_op("DynamicStitch")(_stitch_infer)
register_op("ParallelDynamicStitch")(_stitch_infer)


def _stitch(op_type, indices, data, name):
    if len(indices) != len(data) or not indices:
        raise ValueError(f"{op_type} needs as many indices as data tensors (at least one), "
                         f"got {len(indices)} and {len(data)}")
    with _ops.name_scope(name, op_type, list(indices) + list(data)) as scope:
        indices = [convert(i, f"indices_{k}", dtype=dtypes.int32) for k, i in enumerate(indices)]
        data = [convert(d, f"data_{k}") for k, d in enumerate(data)]
        dtype = data[0].dtype
        data = [convert(d, dtype=dtype) for d in data]
        return _ops.make_tensor(op_type, indices + data, {"T": dtype, "N": len(data)},
                                name=scope)


def dynamic_stitch(indices, data, name=None):
    """Interleaves ``data`` into one tensor: result[indices[m][i]] = data[m][i]."""
    return _stitch("DynamicStitch", list(indices), list(data), name)


def parallel_dynamic_stitch(indices, data, name=None):
    """dynamic_stitch (dtf runs both the same way)."""
    return _stitch("ParallelDynamicStitch", list(indices), list(data), name)


NotDifferentiable("Unique")


def _stitch_grad(op, grad):
    from dtf.framework.indexed_slices import IndexedSlices
    from . import array_ops

    n = len(op.inputs) // 2
    if isinstance(grad, IndexedSlices):
        rows = array_ops.shape(op.outputs[0])[0]
        grad = array_ops.unsorted_segment_sum(grad.values, grad.indices, rows)
    return [None] * n + [array_ops.gather(grad, op.inputs[k]) for k in range(n)]


RegisterGradient("DynamicStitch")(_stitch_grad)
RegisterGradient("ParallelDynamicStitch")(_stitch_grad)


@RegisterGradient("DynamicPartition")
def _dynamic_partition_grad(op, *grads):
    from . import array_ops
    from .reduction_ops import reduce_prod

    data, partitions = op.inputs
    prefix_shape = array_ops.shape(partitions)
    original = array_ops.reshape(array_ops.range(reduce_prod(prefix_shape)), prefix_shape)
    parts = dynamic_partition(original, partitions, op.get_attr("num_partitions"))
    stitched = parallel_dynamic_stitch(parts, list(grads))
    return [array_ops.reshape(stitched, array_ops.shape(data)), None]
