"""Gathering, scattering and padding ops on CUDA: GatherV2 and its gradient's
UnsortedSegmentSum, OneHot, Tile, Pad, PadV2, MirrorPad and MirrorPadGrad; Where.

Indices are checked on the host (they are small, and usually in host memory already), so
an index out of range fails the step as on CPU. Scatters that may hit one element twice
(UnsortedSegmentSum, MirrorPadGrad) add atomically. Where's output size depends on the
data, so it is computed in host memory.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from dtf.framework import errors
from dtf.kernels.reference.array import mirror_padding, pad_widths
from dtf.kernels.registry import register_kernel
from . import device as D
from .array import ANY, norm_axis
from .elementwise import FLOATS, NUMBERS, filled


def _size(shape) -> int:
    return int(np.prod(shape, dtype=np.int64))


# -- gather and its gradient -------------------------------------------------------------------
@cuda.jit
def _gather_axis(params, idx, out, inner, n_idx, limit):
    """out viewed as [outer, n_idx, inner] = params viewed as [outer, limit, inner] at idx."""
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    while i < out.size:
        t = i // inner
        out[i] = params[((t // n_idx) * limit + idx[t % n_idx]) * inner + i % inner]
        i += step


def _host_indices(indices, limit, what="indices"):
    idx = np.asarray(D.to_host(indices))
    bad = (idx < 0) | (idx >= limit)
    if bad.any():
        pos = tuple(int(i) for i in np.argwhere(bad)[0])
        raise errors.InvalidArgumentError(None, None, f"{what}{list(pos)} = {int(idx[pos])} is not in "
                                                      f"[0, {limit})")
    return idx


@register_kernel("GatherV2", "GPU", dtypes=ANY, label="cuda gather")
@D.host_ints_stay("GatherV2")
def gather_v2(node):
    def compute(ctx, params, indices, axis):
        params = D.to_device(params)
        shape = tuple(params.shape)
        a = norm_axis(D.host_ints(axis)[0], len(shape))
        idx = _host_indices(indices, shape[a])
        out = D.empty(shape[:a] + idx.shape + shape[a + 1:], params.dtype)
        if out.size:
            _gather_axis[D.grid(out.size)](D.flat(params), D.to_device(idx.reshape(-1)), D.flat(out),
                                           _size(shape[a + 1:]), idx.size, shape[a])
        return out

    return compute


@cuda.jit
def _segment_sum(data, ids, out, inner, n_seg):
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    while i < data.size:
        s = ids[i // inner]
        if 0 <= s < n_seg:  # TF drops negative ids
            cuda.atomic.add(out, s * inner + i % inner, data[i])
        i += step


@register_kernel("UnsortedSegmentSum", "GPU", dtypes=NUMBERS, label="cuda atomics")
def unsorted_segment_sum(node):
    def compute(ctx, data, segment_ids, num_segments):
        data, n = D.to_device(data), D.host_ints(num_segments)[0]
        ids = np.asarray(D.to_host(segment_ids))
        if tuple(data.shape[:ids.ndim]) != ids.shape:
            raise ValueError(f"data.shape = {list(data.shape)} does not start with "
                             f"segment_ids.shape = {list(ids.shape)}")
        if (ids >= n).any():
            raise errors.InvalidArgumentError(None, None, f"segment_ids {ids[ids >= n][0]} is out of "
                                                          f"range [0, {n})")
        out = filled((n,) + tuple(data.shape[ids.ndim:]), data.dtype, 0)
        if data.size:
            _segment_sum[D.grid(data.size)](D.flat(data), D.to_device(ids.reshape(-1)), D.flat(out),
                                            _size(data.shape[ids.ndim:]), n)
        return out

    return compute


# -- one_hot -------------------------------------------------------------------------------------
@cuda.jit
def _one_hot(idx, out, depth, inner, on, off):
    """out viewed as [outer, depth, inner]; idx viewed as [outer, inner]."""
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    while i < out.size:
        k = (i // (depth * inner)) * inner + i % inner
        out[i] = on[0] if idx[k] == (i // inner) % depth else off[0]
        i += step


@register_kernel("OneHot", "GPU", dtypes=ANY, label="cuda elementwise")
def one_hot(node):
    def compute(ctx, indices, depth, on_value, off_value):
        idx, depth = D.to_device(indices), D.host_ints(depth)[0]
        if depth < 0:
            raise ValueError(f"depth must be non-negative, got: {depth}")
        shape = list(idx.shape)
        axis = int(node.attrs.get("axis", -1))
        axis = len(shape) if axis == -1 else axis
        on, off = (D.flat(D.to_device(v)) for v in (on_value, off_value))
        out = D.empty(shape[:axis] + [depth] + shape[axis:], on.dtype)
        if out.size:
            _one_hot[D.grid(out.size)](D.flat(idx), D.flat(out), depth, _size(shape[axis:]), on, off)
        return out

    return compute


# -- tile and padding ------------------------------------------------------------------------------
@cuda.jit
def _tile(x, out, out_shape, x_shape, x_st):
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    while i < out.size:
        rem = i
        off = 0
        for d in range(len(out_shape) - 1, -1, -1):
            off += (rem % out_shape[d] % x_shape[d]) * x_st[d]
            rem //= out_shape[d]
        out[i] = x[off]
        i += step


@register_kernel("Tile", "GPU", dtypes=ANY, label="cuda gather")
@D.host_ints_stay("Tile")
def tile(node):
    def compute(ctx, x, multiples):
        x, m = D.to_device(x), D.host_ints(multiples)
        shape = tuple(x.shape)
        if len(m) != len(shape):
            raise ValueError(f"Expected multiples argument to be a vector of length {len(shape)} but got "
                             f"length {len(m)}")
        out = D.empty([d * k for d, k in zip(shape, m)], x.dtype)
        if out.size:
            _tile[D.grid(out.size)](D.flat(x), D.flat(out), D.padded(tuple(out.shape), 1),
                                    D.padded(shape, 1), D.padded(D.strides(shape), 0))
        return out

    return compute


CONSTANT, REFLECT, SYMMETRIC = range(3)
_MODES = {"reflect": REFLECT, "symmetric": SYMMETRIC}


@cuda.jit(device=True)
def _source(c, before, n, mode):
    """The index of a dimension of size n that padded position c reads; -1: the constant."""
    j = c - before
    if j < 0:
        if mode == CONSTANT:
            return -1
        return -j if mode == REFLECT else -j - 1
    if j >= n:
        if mode == CONSTANT:
            return -1
        return 2 * n - 2 - j if mode == REFLECT else 2 * n - 1 - j
    return j


@cuda.jit(device=True)
def _padded_source(i, shape, before, x_shape, x_st, mode):
    """Offset in x that element i of the padded array reads; -1: the constant."""
    off = 0
    for d in range(len(shape) - 1, -1, -1):
        j = _source(i % shape[d], before[d], x_shape[d], mode)
        if j < 0:
            return -1
        off += j * x_st[d]
        i //= shape[d]
    return off


@cuda.jit
def _pad(x, out, shape, before, x_shape, x_st, mode, value):
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    while i < out.size:
        off = _padded_source(i, shape, before, x_shape, x_st, mode)
        out[i] = value[0] if off < 0 else x[off]
        i += step


@cuda.jit
def _pad_grad(dy, dx, shape, before, x_shape, x_st, mode):
    """Adds each element of dy to the element of dx it was copied from."""
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    while i < dy.size:
        cuda.atomic.add(dx, _padded_source(i, shape, before, x_shape, x_st, mode), dy[i])
        i += step


def _geometry(x_shape, pads):
    """Kernel arguments describing an array of ``x_shape`` padded by ``pads``."""
    out_shape = tuple(d + b + a for d, (b, a) in zip(x_shape, pads))
    return out_shape, (D.padded(out_shape, 1), D.padded(tuple(b for b, _ in pads), 0),
                       D.padded(tuple(x_shape), 1), D.padded(D.strides(x_shape), 0))


def pad(x, pads, mode, value=None):
    """``x`` padded by ``pads`` [(before, after)] per dimension, with ``value`` (default 0)
    or mirrored (REFLECT, SYMMETRIC)."""
    x = D.to_device(x)
    out_shape, geometry = _geometry(tuple(x.shape), pads)
    out = D.empty(out_shape, x.dtype)
    if out.size:
        # An empty x is padded from the constant only; the kernel still needs an array.
        src = D.flat(x) if x.size else D.to_device(np.zeros(1, x.dtype))
        fill = D.to_device(np.asarray(0 if value is None else value, x.dtype).reshape(1))
        _pad[D.grid(out.size)](src, D.flat(out), *geometry, mode, fill)
    return out


def _stand_in(x):
    """A zero-strided array of x's shape: enough for the reference's argument checks."""
    return np.broadcast_to(np.zeros((), np.int8), tuple(x.shape))


@register_kernel("Pad", "GPU", dtypes=ANY, label="cuda gather")
@D.host_ints_stay("Pad")
def pad_op(node):
    return lambda ctx, x, paddings: pad(x, pad_widths(_stand_in(x), D.to_host(paddings)), CONSTANT)


@register_kernel("PadV2", "GPU", dtypes=ANY, label="cuda gather")
@D.host_ints_stay("PadV2")
def pad_v2(node):
    def compute(ctx, x, paddings, value):
        return pad(x, pad_widths(_stand_in(x), D.to_host(paddings)), CONSTANT, D.to_host(value))

    return compute


@register_kernel("MirrorPad", "GPU", dtypes=ANY, label="cuda gather")
@D.host_ints_stay("MirrorPad")
def mirror_pad(node):
    def compute(ctx, x, paddings):
        pads, mode = mirror_padding(node.attrs, _stand_in(x), D.to_host(paddings))
        return pad(x, pads, _MODES[mode])

    return compute


@register_kernel("MirrorPadGrad", "GPU", dtypes=FLOATS, label="cuda atomics")
def mirror_pad_grad(node):
    mode = _MODES[node.attrs["mode"].lower()]

    def compute(ctx, dy, paddings):
        dy = D.to_device(dy)
        pads = [(int(b), int(a)) for b, a in np.asarray(D.to_host(paddings)).reshape(-1, 2)]
        x_shape = tuple(d - b - a for d, (b, a) in zip(dy.shape, pads))
        _, geometry = _geometry(x_shape, pads)
        dx = filled(x_shape, dy.dtype, 0)
        if dy.size:
            _pad_grad[D.grid(dy.size)](D.flat(dy), D.flat(dx), *geometry, mode)
        return dx

    return compute


register_kernel("Where", "GPU", dtypes=ANY, label="host memory")(D.host_reference_factory("Where"))
