"""Segment reductions (sorted: segment_sum/mean/max/min/prod; unsorted:
unsorted_segment_max/min/prod plus TF's Python composites unsorted_segment_mean and
unsorted_segment_sqrt_n), dynamic_partition and dynamic_stitch, with TF's gradients."""
from __future__ import annotations

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import RegisterGradient, register_op
from dtf.framework.tensor_shape import TensorShape, unknown_shape
from . import array_ops as A
from . import math_ops as M
from .array_ops import _apply
from .common import const_value, convert
from .slicing_ops import _unsorted_segment_sum_infer
from .shape_checks import rank_error

__all__ = ["segment_sum", "segment_mean", "segment_max", "segment_min", "segment_prod",
           "unsorted_segment_max", "unsorted_segment_min", "unsorted_segment_prod",
           "unsorted_segment_mean", "unsorted_segment_sqrt_n", "dynamic_partition",
           "dynamic_stitch"]

_SORTED = {"segment_sum": "SegmentSum", "segment_mean": "SegmentMean", "segment_max": "SegmentMax",
           "segment_min": "SegmentMin", "segment_prod": "SegmentProd"}
_UNSORTED = {"unsorted_segment_max": "UnsortedSegmentMax", "unsorted_segment_min": "UnsortedSegmentMin",
             "unsorted_segment_prod": "UnsortedSegmentProd"}


def _sorted_infer(op_type):
    def infer(inputs, attrs):
        data, ids = inputs
        if ids.shape.ndims not in (None, 1):
            raise rank_error(op_type, attrs, inputs, 1, ids.shape.ndims)
        dims = data.shape.as_tuple_or_none()
        return [(data.dtype, unknown_shape() if dims is None else TensorShape((None,) + dims[1:]))]
    return infer


def _make_sorted(op_type):
    def fn(data, segment_ids, name=None):
        return _apply(op_type, name, [(data, "data", None), (segment_ids, "segment_ids", dtypes.int32)],
                      lambda d, i: {"T": d.dtype, "Tindices": i.dtype}).outputs[0]
    fn.__name__ = op_type
    fn.__doc__ = (f"{op_type[len('Segment'):]} of the rows of ``data`` per segment; ``segment_ids`` "
                  "is a sorted vector with one id per row.")
    return fn


def _make_unsorted(op_type):
    def fn(data, segment_ids, num_segments, name=None):
        return _apply(op_type, name, [(data, "data", None), (segment_ids, "segment_ids", dtypes.int32),
                                      (num_segments, "num_segments", dtypes.int32)],
                      lambda d, i, n: {"T": d.dtype, "Tindices": i.dtype, "Tnumsegments": n.dtype}).outputs[0]
    fn.__name__ = op_type
    fn.__doc__ = (f"{op_type[len('UnsortedSegment'):]} of the slices of ``data`` into ``num_segments`` "
                  "buckets chosen by ``segment_ids`` (negative ids are dropped).")
    return fn


_g = globals()
for _fn, _op in _SORTED.items():
    register_op(_op)(_sorted_infer(_op))
    _g[_fn] = _make_sorted(_op)
for _fn, _op in _UNSORTED.items():
    register_op(_op)(_unsorted_segment_sum_infer)
    _g[_fn] = _make_unsorted(_op)


def _unsorted_segment_n(data, segment_ids, num_segments):
    """Entries per segment, at least 1, shaped to broadcast against the segment sums."""
    num_segments = convert(num_segments, "num_segments", hint=dtypes.int32)
    ones = A.ones(A.shape(segment_ids), dtype=data.dtype)
    n = A.unsorted_segment_sum(ones, segment_ids, num_segments)
    if data.shape.ndims is not None and segment_ids.shape.ndims is not None:
        n = A.reshape(n, [-1] + [1] * (data.shape.ndims - segment_ids.shape.ndims))  # static shape
    else:
        extra = A.ones(A.expand_dims(A.rank(data) - A.rank(segment_ids), 0), dtype=num_segments.dtype)
        n = A.reshape(n, A.concat([A.expand_dims(num_segments, 0), extra], 0))
    return M.maximum(n, M.cast(1, data.dtype))


def unsorted_segment_mean(data, segment_ids, num_segments, name=None):
    """Mean of the slices of ``data`` per segment; an empty segment gives 0."""
    with _ops.name_scope(name, "UnsortedSegmentMean"):
        data = convert(data, "data")
        segment_ids = convert(segment_ids, "segment_ids", hint=dtypes.int32)
        n = _unsorted_segment_n(data, segment_ids, num_segments)
        return A.unsorted_segment_sum(data, segment_ids, num_segments) / n


def unsorted_segment_sqrt_n(data, segment_ids, num_segments, name=None):
    """Sum of the slices of ``data`` per segment divided by sqrt(count); empty gives 0."""
    with _ops.name_scope(name, "UnsortedSegmentSqrtN"):
        data = convert(data, "data")
        segment_ids = convert(segment_ids, "segment_ids", hint=dtypes.int32)
        n = _unsorted_segment_n(data, segment_ids, num_segments)
        return A.unsorted_segment_sum(data, segment_ids, num_segments) / M.sqrt(n)


# -- dynamic_partition, dynamic_stitch -----------------------------------------------------
@register_op("DynamicPartition")
def _dynamic_partition_infer(inputs, attrs):
    data, partitions = inputs
    dims, pn = data.shape.as_tuple_or_none(), partitions.shape.ndims
    shape = unknown_shape() if dims is None or pn is None else TensorShape((None,) + dims[pn:])
    return [(data.dtype, shape)] * attrs["num_partitions"]


def dynamic_partition(data, partitions, num_partitions, name=None):
    """Splits ``data`` into ``num_partitions`` tensors: slice i goes to output partitions[i]."""
    if int(num_partitions) < 1:
        raise ValueError(f"num_partitions must be at least 1, got {num_partitions}")
    return _apply("DynamicPartition", name, [(data, "data", None), (partitions, "partitions", dtypes.int32)],
                  lambda d, p: {"T": d.dtype, "num_partitions": int(num_partitions)}).outputs


@register_op("DynamicStitch")
def _dynamic_stitch_infer(inputs, attrs):
    n = attrs["N"]
    indices, data = inputs[:n], inputs[n:]
    i0, d0 = indices[0].shape.ndims, data[0].shape.as_tuple_or_none()
    if i0 is None or d0 is None:
        return [(data[0].dtype, unknown_shape())]
    consts = [const_value(i) for i in indices]  # constant indices fix the length, as in TF
    size = None if any(c is None for c in consts) else \
        max((int(c.max()) + 1 for c in consts if c.size), default=0)
    return [(data[0].dtype, TensorShape((size,) + d0[i0:]))]


def dynamic_stitch(indices, data, name=None):
    """Interleaves the values of ``data`` into one tensor: merged[indices[m][i]] = data[m][i]."""
    return stitch("DynamicStitch", indices, data, name)


def stitch(op_type, indices, data, name):
    """A DynamicStitch-like op (DynamicStitch, or ParallelDynamicStitch as embedding_lookup
    builds it) over ``indices`` and ``data``."""
    indices, data = list(indices), list(data)
    if len(indices) != len(data) or not indices:
        raise ValueError(f"dynamic_stitch needs as many data tensors as index tensors (at least "
                         f"one); got {len(indices)} and {len(data)}")
    with _ops.name_scope(name, op_type, indices + data) as scope:
        indices = [convert(i, f"indices_{k}", dtype=dtypes.int32) for k, i in enumerate(indices)]
        data = A._convert_list(data, op_type, "data")
        return _ops.make_tensor(op_type, indices + data, {"T": data[0].dtype, "N": len(data)},
                                name=scope)


# -- gradients (TF's rules) ----------------------------------------------------------------
@RegisterGradient("SegmentSum")
def _segment_sum_grad(op, grad):
    return [A.gather(grad, op.inputs[1]), None]


@RegisterGradient("SegmentMean")
def _segment_mean_grad(op, grad):
    data, ids = op.inputs
    ones_shape = A.concat([A.shape(ids), A.ones(A.expand_dims(A.rank(data) - 1, 0), dtype=dtypes.int32)], 0)
    ones = A.ones(ones_shape, dtype=grad.dtype)
    scaled = grad / _g["segment_sum"](ones, ids)
    return [A.gather(scaled, ids), None]


def _segment_min_or_max_grad(op, grad):
    data, ids = op.inputs
    is_selected = M.equal(data, A.gather(op.outputs[0], ids))
    num_selected = _g["segment_sum"](M.cast(is_selected, grad.dtype), ids)
    gathered = A.gather(grad / num_selected, ids)
    return [M.where_v2(is_selected, gathered, A.zeros_like(data)), None]


RegisterGradient("SegmentMax")(_segment_min_or_max_grad)
RegisterGradient("SegmentMin")(_segment_min_or_max_grad)


@RegisterGradient("SegmentProd")
def _segment_prod_grad(op, grad):
    data, ids = op.inputs
    seg_sum, seg_prod = _g["segment_sum"], _g["segment_prod"]
    is_zero = M.equal(data, M.cast(0, data.dtype))
    num_zeros = seg_sum(M.cast(is_zero, dtypes.int32), ids)
    grad = M.where_v2(M.greater(num_zeros, 1), A.zeros_like(grad), grad)
    non_zero = M.where_v2(is_zero, A.ones_like(data), data)
    partial = M.where_v2(is_zero, A.gather(seg_prod(non_zero, ids), ids),
                         A.gather(op.outputs[0], ids) / non_zero)
    return [A.gather(grad, ids) * partial, None]


def _gather_drop_negatives(params, ids, clipped=None, is_positive=None):
    """gather(params, max(ids, 0)) with zeros where an id is negative (TF's helper)."""
    if clipped is None:
        clipped = M.maximum(ids, A.zeros_like(ids))
    gathered = A.gather(params, clipped)
    if is_positive is None:
        is_positive = M.greater_equal(ids, 0)
        if gathered.shape.ndims is not None and ids.shape.ndims is not None:  # static shapes
            for _ in range(gathered.shape.ndims - ids.shape.ndims):
                is_positive = A.expand_dims(is_positive, -1)
        else:
            ps = A.shape(is_positive)
            extra = A.ones(A.expand_dims(A.rank(gathered) - A.rank(is_positive), 0), dtype=ps.dtype)
            is_positive = A.reshape(is_positive, A.concat([ps, extra], 0))
        is_positive = M.logical_and(is_positive, A.ones_like(gathered, dtype=dtypes.bool))
    return M.where_v2(is_positive, gathered, A.zeros_like(gathered)), clipped, is_positive


def _unsorted_min_or_max_grad(op, grad):
    data, ids, num = op.inputs
    gathered_out, clipped, is_positive = _gather_drop_negatives(op.outputs[0], ids)
    is_selected = M.logical_and(M.equal(data, gathered_out), is_positive)
    num_selected = A.unsorted_segment_sum(M.cast(is_selected, grad.dtype), ids, num)
    gathered, _, _ = _gather_drop_negatives(grad / num_selected, None, clipped, is_positive)
    return [M.where_v2(is_selected, gathered, A.zeros_like(gathered)), None, None]


RegisterGradient("UnsortedSegmentMax")(_unsorted_min_or_max_grad)
RegisterGradient("UnsortedSegmentMin")(_unsorted_min_or_max_grad)


@RegisterGradient("UnsortedSegmentProd")
def _unsorted_segment_prod_grad(op, grad):
    data, ids, num = op.inputs
    is_zero = M.equal(data, M.cast(0, data.dtype))
    num_zeros = A.unsorted_segment_sum(M.cast(is_zero, dtypes.int32), ids, num)
    grad = M.where_v2(M.greater(num_zeros, 1), A.zeros_like(grad), grad)
    non_zero = M.where_v2(is_zero, A.ones_like(data), data)
    non_zero_prod = _g["unsorted_segment_prod"](non_zero, ids, num)
    clipped = M.maximum(ids, A.zeros_like(ids))
    partial = M.where_v2(is_zero, A.gather(non_zero_prod, clipped),
                         A.gather(op.outputs[0], clipped) / data)
    return [_gather_drop_negatives(grad, ids, clipped)[0] * partial, None, None]


@RegisterGradient("DynamicPartition")
def _dynamic_partition_grad(op, *grads):
    data, partitions = op.inputs
    prefix = A.shape(partitions)
    from .reduction_ops import reduce_prod
    original = A.reshape(A.range(reduce_prod(prefix)), prefix)
    parts = dynamic_partition(original, partitions, op.get_attr("num_partitions"))
    return [A.reshape(dynamic_stitch(parts, list(grads)), A.shape(data)), None]


@RegisterGradient("DynamicStitch")
def _dynamic_stitch_grad(op, grad):
    n = op.get_attr("N")
    return [None] * n + [A.gather(grad, i) for i in op.inputs[:n]]

MATH_API = [fn for fn in __all__ if fn not in ("dynamic_partition", "dynamic_stitch")]  # tf.math's
