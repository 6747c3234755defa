"""Gradients of the array ops (TF's rules: GatherV2 along axis 0 gives IndexedSlices,
along other axes a dense gradient built with UnsortedSegmentSum)."""
from __future__ import annotations

import numpy as np

from dtf.framework import dtypes
from dtf.framework import ops as _ops
from dtf.framework.op_registry import NotDifferentiable, RegisterGradient
from . import array_ops as A
from .common import const_value

for _t in ("Placeholder", "Size", "Rank", "Range", "StopGradient", "OneHot", "Where",
           "InvertPermutation"):
    NotDifferentiable(_t)


def _dims(t):
    """Static shape as a list when fully known (keeps gradient graphs small), else Shape."""
    return t.shape.as_list() if t.shape.is_fully_defined() else A.shape(t)


def _axis_of(op, axis_tensor, rank_of):
    """Non-negative axis: a Python int when static, else floormod(axis, rank)."""
    a, nd = const_value(axis_tensor), rank_of.shape.ndims
    if a is not None and (int(a) >= 0 or nd is not None):
        return int(a) % nd if nd else int(a)
    from .math_ops import floormod

    return floormod(axis_tensor, A.rank(rank_of))


def _reshape_back(op, grad):
    return [A.reshape(grad, _dims(op.inputs[0]))] + [None] * (len(op.inputs) - 1)


for _t in ("Reshape", "ExpandDims", "Squeeze"):
    RegisterGradient(_t)(_reshape_back)


@RegisterGradient("PlaceholderWithDefault")
def _placeholder_with_default_grad(op, grad):
    return [grad]


@RegisterGradient("Fill")
def _fill_grad(op, grad):
    from .reduction_ops import reduce_sum

    return [None, reduce_sum(grad)]


@RegisterGradient("BroadcastTo")
def _broadcast_to_grad(op, grad):
    from .reduction_ops import reduce_sum

    x = op.inputs[0]
    rx, _ = A.broadcast_gradient_args(A.shape(x), A.shape(op.outputs[0]))
    return [A.reshape(reduce_sum(grad, rx, keepdims=True), _dims(x)), None]


@RegisterGradient("Transpose")
def _transpose_grad(op, grad):
    perm = const_value(op.inputs[1])
    inverse = np.argsort(perm).astype(np.int32) if perm is not None else A.invert_permutation(op.inputs[1])
    return [A.transpose(grad, inverse), None]


@RegisterGradient("ConcatV2")
def _concat_grad(op, grad):
    values = op.inputs[:-1]
    axis = _axis_of(op, op.inputs[-1], values[0])
    if isinstance(axis, int) and all(v.shape.ndims and v.shape[axis].value is not None for v in values):
        sizes = [v.shape[axis].value for v in values]
    else:
        sizes = A.stack([A.gather(A.shape(v), axis) for v in values])
    return A.split(grad, sizes, axis=axis, num=len(values)) + [None]


@RegisterGradient("Split")
def _split_grad(op, *grads):
    return [None, A.concat(list(grads), op.inputs[0])]


@RegisterGradient("SplitV")
def _split_v_grad(op, *grads):
    return [A.concat(list(grads), op.inputs[2]), None, None]


@RegisterGradient("Pack")
def _pack_grad(op, grad):
    return A.unstack(grad, num=op.get_attr("N"), axis=op.get_attr("axis"))


@RegisterGradient("Unpack")
def _unpack_grad(op, *grads):
    return [A.stack(list(grads), axis=op.get_attr("axis"))]


@RegisterGradient("Slice")
def _slice_grad(op, grad):
    x, begin = op.inputs[0], op.inputs[1]
    column = A.stack([A.rank(x), 1])
    before = A.reshape(begin, column)
    after = A.reshape(A.shape(x) - A.shape(op.outputs[0]) - begin, column)
    return [A.pad(grad, A.concat([before, after], 1)), None, None]


def _masks(op):
    return {m: op.get_attr(m) for m in A._MASKS}


@RegisterGradient("StridedSlice")
def _strided_slice_grad(op, grad):
    x, begin, end, strides = op.inputs
    shape = A.shape(x, out_type=begin.dtype)
    return [A.strided_slice_grad(shape, begin, end, strides, grad, **_masks(op)), None, None, None]


@RegisterGradient("StridedSliceGrad")
def _strided_slice_grad_grad(op, grad):
    _, begin, end, strides, _ = op.inputs
    return [None, None, None, None, A.strided_slice(grad, begin, end, strides, **_masks(op))]


@RegisterGradient("GatherV2")
def _gather_grad(op, grad):
    """Scatter-adds ``grad`` back onto params' rows: the gathered dims are moved to the
    front, flattened, summed per index with UnsortedSegmentSum, and moved back."""
    params, indices, axis_t = op.inputs
    axis = const_value(axis_t)
    if axis is None or params.shape.ndims is None or (int(axis) != 0 and indices.shape.ndims is None):
        raise NotImplementedError(f"gradient of GatherV2 '{op.name}' needs a constant axis and known ranks")
    nd = params.shape.ndims
    axis = int(axis) % nd
    if axis == 0:
        return [_gather_rows_grad(params, indices, grad), None, None]
    ps = _dims(params)
    if axis:
        ni = indices.shape.ndims
        front = list(range(axis, axis + ni)) + list(range(axis)) + list(range(axis + ni, nd + ni - 1))
        grad = A.transpose(grad, front)
    rest = A.concat([[-1], ps[:axis], ps[axis + 1:]], 0)
    values = A.reshape(grad, rest)
    summed = A.unsorted_segment_sum(values, A.reshape(indices, [-1]), ps[axis])
    if axis:
        summed = A.transpose(summed, list(range(1, axis + 1)) + [0] + list(range(axis + 1, nd)))
    return [summed, None, None]


def _gather_rows_grad(params, indices, grad):
    """TF's gradient of a gather along axis 0: IndexedSlices holding only the gathered rows,
    so a large table's gradient costs what its lookup did. The dense shape is read beside
    params (no table moves for it)."""
    from dtf.framework.indexed_slices import IndexedSlices
    from .math_ops import cast

    with _ops.colocate_with(params.op):
        params_shape = cast(A.shape(params, out_type=dtypes.int64), dtypes.int32)
    indices_size = A.expand_dims(A.size(indices), 0)
    tail = params.shape[1:]
    # A static tail keeps the values' static shape (what TF's constant folding finds).
    tail = tail.as_list() if tail.is_fully_defined() else params_shape[1:]
    values_shape = A.concat([indices_size, tail], 0)
    values = A.reshape(grad, values_shape)
    if params.shape.ndims is not None:
        values.set_shape([indices.shape.num_elements()] + params.shape[1:].as_list())
    return IndexedSlices(values, A.reshape(indices, indices_size), params_shape)


@RegisterGradient("UnsortedSegmentSum")
def _unsorted_segment_sum_grad(op, grad):
    from .segment_ops import _gather_drop_negatives  # negative ids were dropped: no gradient

    return [_gather_drop_negatives(grad, op.inputs[1])[0], None, None]


@RegisterGradient("Tile")
def _tile_grad(op, grad):
    from .reduction_ops import reduce_sum

    x, multiples = op.inputs
    split_shape = A.reshape(A.transpose(A.stack([multiples, A.shape(x, out_type=multiples.dtype)])), [-1])
    axes = A.range(0, A.size(split_shape), 2)
    return [reduce_sum(A.reshape(grad, split_shape), axes), None]


def _pad_grad(op, grad):
    x, paddings = op.inputs[:2]
    before = A.slice(paddings, [0, 0], A.stack([A.rank(x), 1]))
    return [A.slice(grad, A.reshape(before, [-1]), A.shape(x))] + [None] * (len(op.inputs) - 1)


RegisterGradient("Pad")(_pad_grad)
RegisterGradient("PadV2")(_pad_grad)


def _mirror_op(op_type):
    def grad_fn(op, grad):
        paddings = op.inputs[1]
        out = A._ops.make_tensor(op_type, [grad, paddings], {**op.attrs, "T": grad.dtype}, name=op_type)
        return [out, None]

    return grad_fn


RegisterGradient("MirrorPad")(_mirror_op("MirrorPadGrad"))
RegisterGradient("MirrorPadGrad")(_mirror_op("MirrorPad"))


@RegisterGradient("ReverseV2")
def _reverse_grad(op, grad):
    return [A.reverse(grad, op.inputs[1]), None]
