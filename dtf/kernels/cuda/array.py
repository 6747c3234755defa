"""Structural and array ops of a GPU partition.

Reshape, ExpandDims, Squeeze and Identity only relabel a contiguous device array. Shape-
like ops (Shape, Size, Rank, BroadcastGradientArgs, ...) read metadata or small integer
tensors and answer in host memory, as TF's GPU kernels of these ops do. Transpose, ConcatV2
and Pack copy through strided gather kernels. Structural ops whose inputs are all host
integer arrays (shapes being assembled) run on the host (``D.host_ints_stay``).
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from dtf.kernels.cpu.core import placeholder as _cpu_placeholder
from dtf.kernels.reference import REFERENCE
from dtf.kernels.registry import register_kernel
from . import device as D
from .elementwise import NUMBERS

ANY = NUMBERS + ("bool",)


# -- values entering the partition --------------------------------------------------------------
@register_kernel("Const", "GPU")
def const(node):
    """Floating constants are copied to the device once per plan; integer and string
    constants stay on the host (they are shapes, axes and labels)."""
    value = node.attrs["value"]
    if np.asarray(value).dtype.kind != "f":
        return lambda ctx: value
    cached = []

    def compute(ctx):
        if not cached:
            cached.append(D.to_device(value))
        return cached[0]

    return compute


register_kernel("Placeholder", "GPU")(_cpu_placeholder)


@register_kernel("_Send", "GPU")
def send(node):
    key = node.attrs["key"]
    dst = node.attrs["recv_task"]

    def compute(ctx, x):
        ctx.rendezvous.send(key, D.to_host(x), dst)

    return compute


@register_kernel("_Recv", "GPU")
def recv(node):
    """Received tensors arrive in host memory (the dataflow executor fills the slot itself);
    consumers copy them to the device on use."""
    key = node.attrs["key"]

    def compute(ctx):
        return D.to_device(ctx.rendezvous.recv(key, ctx.deadline))

    compute.recv_key = key
    return compute


def _pass_through(node):
    return lambda ctx, x: x


for _op in ("Identity", "StopGradient", "PlaceholderWithDefault"):
    register_kernel(_op, "GPU")(_pass_through)


@register_kernel("NoOp", "GPU")
def no_op(node):
    return lambda ctx: None


# -- metadata ops, answered in host memory -----------------------------------------------------
def _metadata_factory(op):
    fn = REFERENCE[op]

    def factory(node):
        return lambda ctx, x: fn(node.attrs, x)  # reads only x.shape / x.size / x.ndim

    return factory


for _op in ("Shape", "Size", "Rank"):
    register_kernel(_op, "GPU", label="host metadata")(_metadata_factory(_op))
for _op in ("BroadcastGradientArgs", "ReducedShape", "InvertPermutation", "Range"):
    register_kernel(_op, "GPU", dtypes=("int32", "int64"), label="host memory")(D.host_reference_factory(_op))


# -- relabelling ops ---------------------------------------------------------------------------
def relabel(x, shape):
    x = D.to_device(x)
    return x.reshape(*shape) if shape else x.reshape(1).reshape(())


@register_kernel("Reshape", "GPU", dtypes=ANY, label="metadata")
@D.host_ints_stay("Reshape")
def reshape(node):
    ref = REFERENCE["Reshape"]

    def compute(ctx, x, shape):
        # The reference checks sizes and resolves -1 on a zero-strided stand-in (no copy).
        stand_in = np.broadcast_to(np.zeros((), np.int8), tuple(x.shape))
        return relabel(x, ref(node.attrs, stand_in, D.to_host(shape)).shape)

    return compute


@register_kernel("ExpandDims", "GPU", dtypes=ANY, label="metadata")
@D.host_ints_stay("ExpandDims")
def expand_dims(node):
    def compute(ctx, x, axis):
        shape = list(x.shape)
        a = D.host_ints(axis)[0]
        if a < -len(shape) - 1 or a > len(shape):
            raise ValueError(f"Tried to expand dim index {a} for tensor with {len(shape)} dimensions.")
        shape.insert(a % (len(shape) + 1), 1)
        return relabel(x, shape)

    return compute


def norm_axis(a, ndim):
    if a < -ndim or a >= ndim:
        raise ValueError(f"Expected axis in the range [{-ndim}, {ndim}), but got {a}")
    return a % ndim


@register_kernel("Squeeze", "GPU", dtypes=ANY, label="metadata")
@D.host_ints_stay("Squeeze")
def squeeze(node):
    dims = node.attrs.get("squeeze_dims") or []

    def compute(ctx, x):
        shape = tuple(x.shape)
        axes = {norm_axis(a, len(shape)) for a in dims} if dims else {i for i, d in enumerate(shape) if d == 1}
        for a in sorted(axes):
            if shape[a] != 1:
                raise ValueError(f"Can not squeeze dim[{a}], expected a dimension of 1, got {shape[a]}")
        return relabel(x, [d for i, d in enumerate(shape) if i not in axes])

    return compute


# -- copying ops -------------------------------------------------------------------------------
@cuda.jit
def _strided_copy(x, out, shape, src_st, base):
    """out[i] = x at base + the source offset of out's multi-index i (src_st: strides per out
    dim, possibly negative or zero)."""
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    while i < out.size:
        rem = i
        off = base
        for d in range(len(shape) - 1, -1, -1):
            off += (rem % shape[d]) * src_st[d]
            rem //= shape[d]
        out[i] = x[off]
        i += step


def copy_view(x, shape, st, base=0):
    """A contiguous device copy of the strided view (shape, element strides, base offset) of
    the contiguous device array ``x``."""
    out = D.empty(shape, x.dtype)
    if out.size:
        _strided_copy[D.grid(out.size)](D.flat(x), D.flat(out), D.padded(tuple(out.shape), 1),
                                        D.padded(tuple(st), 0), base)
    return out


@cuda.jit
def _place_block(src, dst, inner, dst_inner, offset):
    """Copies src, viewed as [outer, inner], into columns [offset, offset + inner) of dst
    viewed as [outer, dst_inner]."""
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    while i < src.size:
        dst[(i // inner) * dst_inner + offset + i % inner] = src[i]
        i += step


@register_kernel("Transpose", "GPU", dtypes=ANY, label="cuda gather")
@D.host_ints_stay("Transpose")
def transpose(node):
    def compute(ctx, x, perm):
        x = D.to_device(x)
        perm = D.host_ints(perm)
        if sorted(perm) != list(range(len(x.shape))):
            raise ValueError(f"transpose expects a permutation of [0, {len(x.shape)}), got {perm}")
        st = D.strides(x.shape)
        return copy_view(x, [x.shape[p] for p in perm], [st[p] for p in perm])

    return compute


def concat(xs, axis):
    """Concatenation of same-rank device arrays along a normalised ``axis``."""
    xs = [D.to_device(x) for x in xs]
    base = list(xs[0].shape)
    for x in xs:
        if [d for i, d in enumerate(x.shape) if i != axis] != [d for i, d in enumerate(base) if i != axis]:
            raise ValueError(f"ConcatOp: dimensions of inputs should match: shape[0] = {base} vs. "
                             f"shape = {list(x.shape)}")
    shape = base[:axis] + [sum(x.shape[axis] for x in xs)] + base[axis + 1:]
    out = D.empty(shape, xs[0].dtype)
    dst_inner = int(np.prod(shape[axis:], dtype=np.int64))
    offset = 0
    for x in xs:
        inner = int(np.prod(x.shape[axis:], dtype=np.int64))
        if x.size:
            _place_block[D.grid(x.size)](D.flat(x), D.flat(out), inner, dst_inner, offset)
        offset += inner
    return out


@register_kernel("ConcatV2", "GPU", dtypes=ANY, label="cuda copy")
@D.host_ints_stay("ConcatV2")
def concat_v2(node):
    def compute(ctx, *args):
        xs, axis = args[:-1], D.host_ints(args[-1])[0]
        ranks = {len(x.shape) for x in xs}
        if len(ranks) != 1:
            raise ValueError(f"ConcatOp: inputs must have the same rank, got shapes "
                             f"{[list(x.shape) for x in xs]}")
        return concat(xs, norm_axis(axis, ranks.pop()))

    return compute


@register_kernel("Pack", "GPU", dtypes=ANY, label="cuda copy")
@D.host_ints_stay("Pack")
def pack(node):
    def compute(ctx, *xs):
        shapes = {tuple(x.shape) for x in xs}
        if len(shapes) != 1:
            raise ValueError(f"Shapes of all inputs must match: {[list(x.shape) for x in xs]}")
        shape = list(shapes.pop())
        axis = norm_axis(int(node.attrs.get("axis", 0)), len(shape) + 1)
        expanded = shape[:axis] + [1] + shape[axis:]
        return concat([relabel(x, expanded) for x in xs], axis)

    return compute
