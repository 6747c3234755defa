"""Slicing ops on CUDA: Slice, StridedSlice and its gradient, ReverseV2, BroadcastTo, Split,
SplitV and Unpack.

Every output is a strided view of the input. numpy works out the view's shape, element
strides (negative when reversed, zero when broadcast) and offset on a stand-in array that
has the input's shape and strides but is never read; one gather kernel then copies the view
(StridedSliceGrad scatters into it). Inputs that are all host integer arrays (shapes being
taken apart) are sliced on the host, as TF's int32 GPU kernels of these ops do.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from dtf.kernels.reference import REFERENCE
from dtf.kernels.reference.array import strided_slice_index
from dtf.kernels.registry import register_kernel
from . import device as D
from .array import ANY, copy_view, norm_axis
from .elementwise import filled

_ITEM = 8  # stand-in element size in bytes


def stand_in(shape):
    """A read-only array of ``shape`` with a contiguous array's strides over one element:
    basic indexing, np.flip and np.broadcast_to give views of it without reading it."""
    base = np.zeros(1, np.int64)
    return np.lib.stride_tricks.as_strided(base, tuple(shape), [s * _ITEM for s in D.strides(shape)],
                                           writeable=False)


def layout(whole, view) -> tuple:
    """(shape, element strides, element offset) of ``view`` taken from stand-in ``whole``."""
    offset = view.__array_interface__["data"][0] - whole.__array_interface__["data"][0]
    return tuple(view.shape), tuple(s // _ITEM for s in view.strides), offset // _ITEM


def copy_views(x, whole, views):
    """Device copies of ``views`` (of stand-in ``whole``) of the device array ``x``."""
    return tuple(copy_view(x, *layout(whole, v)) for v in views)


def _basic(index) -> tuple:
    """A basic index that always yields a view (a trailing Ellipsis keeps an all-integer
    index from reading a scalar out of the stand-in)."""
    return index if any(i is Ellipsis for i in index) else index + (Ellipsis,)


def _strided_view(shape, attrs, begin, end, strides):
    whole = stand_in(shape)
    index = _basic(strided_slice_index(attrs, *(D.to_host(v) for v in (begin, end, strides))))
    try:
        return whole, whole[index]
    except IndexError as e:
        raise ValueError(f"slice index out of bounds for input shape {list(shape)}: {e}") from None


@register_kernel("StridedSlice", "GPU", dtypes=ANY, label="cuda gather")
@D.host_ints_stay("StridedSlice")
def strided_slice(node):
    def compute(ctx, x, begin, end, strides):
        x = D.to_device(x)
        whole, view = _strided_view(x.shape, node.attrs, begin, end, strides)
        return copy_views(x, whole, [view])[0]

    return compute


@cuda.jit
def _strided_place(src, dst, shape, dst_st, base):
    """dst at base + the offset of src's multi-index i (dst_st: strides per src dim) = src[i]."""
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    while i < src.size:
        rem = i
        off = base
        for d in range(len(shape) - 1, -1, -1):
            off += (rem % shape[d]) * dst_st[d]
            rem //= shape[d]
        dst[off] = src[i]
        i += step


@register_kernel("StridedSliceGrad", "GPU", dtypes=ANY, label="cuda scatter")
@D.host_ints_stay("StridedSliceGrad")
def strided_slice_grad(node):
    def compute(ctx, shape, begin, end, strides, dy):
        shape, dy = D.host_ints(shape), D.to_device(dy)
        view_shape, st, base = layout(*_strided_view(shape, node.attrs, begin, end, strides))
        if view_shape != tuple(dy.shape):
            raise ValueError(f"shape of dy was {list(dy.shape)} instead of {list(view_shape)}")
        out = filled(shape, dy.dtype, 0)
        if dy.size:
            _strided_place[D.grid(dy.size)](D.flat(dy), D.flat(out), D.padded(view_shape, 1),
                                            D.padded(st, 0), base)
        return out

    return compute


@register_kernel("Slice", "GPU", dtypes=ANY, label="cuda gather")
@D.host_ints_stay("Slice")
def slice_op(node):
    def compute(ctx, x, begin, size):
        x = D.to_device(x)
        shape, begin, size = tuple(x.shape), D.host_ints(begin), D.host_ints(size)
        if len(begin) != len(shape) or len(size) != len(shape):
            raise ValueError(f"Expected begin and size arguments to be 1-D tensors of size {len(shape)}, "
                             f"but got shapes [{len(begin)}] and [{len(size)}] instead.")
        index = []
        for d, b, s in zip(shape, begin, size):
            s = d - b if s == -1 else s
            if b < 0 or s < 0 or b + s > d:
                raise ValueError(f"Expected begin {b} and size {s} to be within [0, {d}] "
                                 f"for input shape {list(shape)}")
            index.append(slice(b, b + s))
        whole = stand_in(shape)
        return copy_views(x, whole, [whole[_basic(tuple(index))]])[0]

    return compute


@register_kernel("ReverseV2", "GPU", dtypes=ANY, label="cuda gather")
@D.host_ints_stay("ReverseV2")
def reverse_v2(node):
    def compute(ctx, x, axis):
        x = D.to_device(x)
        whole = stand_in(x.shape)
        axes = tuple({norm_axis(a, len(x.shape)) for a in D.host_ints(axis)})
        return copy_views(x, whole, [np.flip(whole, axis=axes)])[0]

    return compute


@register_kernel("BroadcastTo", "GPU", dtypes=ANY, label="cuda gather")
@D.host_ints_stay("BroadcastTo")
def broadcast_to(node):
    def compute(ctx, x, shape):
        x = D.to_device(x)
        whole = stand_in(x.shape)
        return copy_views(x, whole, [np.broadcast_to(whole, D.host_ints(shape))])[0]

    return compute


def _split_factory(op, value_pos):
    """Split and SplitV: the reference splits the stand-in (np.split only takes views), which
    checks the arguments and gives each piece's layout."""
    ref = REFERENCE[op]

    def factory(node):
        def compute(ctx, *args):
            x = D.to_device(args[value_pos])
            whole = stand_in(x.shape)
            rest = [whole if i == value_pos else D.to_host(a) for i, a in enumerate(args)]
            return copy_views(x, whole, ref(node.attrs, *rest))

        return compute

    return factory


for _op, _pos in (("Split", 1), ("SplitV", 0)):
    register_kernel(_op, "GPU", dtypes=ANY, label="cuda gather")(
        D.host_ints_stay(_op)(_split_factory(_op, _pos)))


@register_kernel("Unpack", "GPU", dtypes=ANY, label="cuda gather")
@D.host_ints_stay("Unpack")
def unpack(node):
    num = int(node.attrs["num"])

    def compute(ctx, x):
        x = D.to_device(x)
        a = norm_axis(int(node.attrs.get("axis", 0)), len(x.shape))
        if x.shape[a] != num:
            raise ValueError(f"Input shape axis {a} must equal {num}, got shape {list(x.shape)}")
        whole = stand_in(x.shape)
        lead = (slice(None),) * a
        return copy_views(x, whole, [whole[lead + (i, Ellipsis)] for i in range(num)])

    return compute
